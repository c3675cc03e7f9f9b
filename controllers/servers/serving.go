/*
Copyright 2026 The memcached-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package servers

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/serverset"
	"github.com/example/memcached-operator/internal/helm"
	"github.com/example/memcached-operator/internal/labels"
)

// A warm restart (a new image, memcached restarted in its pod with its items) happens in a pod
// that stays Ready until the kubelet sees memcached stopped, so the ClusterIP Service would go on
// sending new connections to it for about a second, and they would be refused. With
// keepCacheAcross Restarts the Service therefore also selects labels.Serving=true, which the
// chart puts on every server; the operator sets it to false before it changes a server's image
// (the Service drops the server while the container's preStop sleeps, before memcached stops) and
// back to true once memcached serves again. The headless Service, the server list of clients that
// shard, is not changed: a server restarting is down for them, as with any restart.

// setServing sets labels.Serving of server p to serving, where p carries it (only the servers of
// a cache with keepCacheAcross Restarts do).
func (r *Reconciler) setServing(ctx context.Context, p *corev1.Pod, serving bool) error {
	want := strconv.FormatBool(serving)
	if v, ok := p.Labels[labels.Serving]; !ok || v == want {
		return nil
	}
	return r.labelServing(ctx, p, want)
}

func (r *Reconciler) labelServing(ctx context.Context, p *corev1.Pod, value string) error {
	before := p.DeepCopy()
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[labels.Serving] = value
	if err := r.Live.Patch(ctx, p, client.MergeFrom(before)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("label server %s %s=%s: %w", p.Name, labels.Serving, value, err)
	}
	return nil
}

// keepServing sets labels.Serving back to true on every server but those status.rollout says
// restart now: a server left out of the Service by a restart the operator did not see through (a
// change rolled out meanwhile, an operator stopped) serves again. Only the servers of a cache
// whose template has the label carry it.
func (r *Reconciler) keepServing(ctx context.Context, servers *appsv1.StatefulSet, pods map[int32]*corev1.Pod, rs *cachev1.RolloutStatus) error {
	if _, ok := servers.Spec.Template.Labels[labels.Serving]; !ok {
		return nil
	}
	var failed error
	for _, p := range pods {
		if e := entryOf(rs, p.Name); (e == nil || e.Restart == nil) && p.Labels[labels.Serving] == "false" {
			failed = errors.Join(failed, r.setServing(ctx, p.DeepCopy(), true))
		}
	}
	return failed
}

// servingBeforeUpgrade labels the running servers with labels.Serving=true before Helm applies a
// release whose ClusterIP Service selects it (keepCacheAcross Restarts turned on), so that the
// Service never selects none of them: servers made from the old template lack it.
func (r *Reconciler) servingBeforeUpgrade(ctx context.Context, cr client.Object, target *helm.Rendered) error {
	if target == nil || !selectsServing(target.Manifest) {
		return nil
	}
	to := serverset.StatefulSetOf(target.Manifest)
	if to == nil {
		return nil
	}
	live := &appsv1.StatefulSet{}
	if err := r.Live.Get(ctx, client.ObjectKey{Namespace: cr.GetNamespace(), Name: to.Name}, live); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !serverset.MadeForRelease(live, cr) {
		return nil
	}
	mc := &cachev1.Memcached{}
	if err := r.Live.Get(ctx, client.ObjectKeyFromObject(cr), mc); err != nil {
		return err
	}
	list := &corev1.PodList{}
	if err := r.List(ctx, list, client.InNamespace(live.Namespace), client.MatchingFields{serverset.InstanceIndex: cr.GetName()}, client.MatchingLabels(live.Spec.Selector.MatchLabels)); err != nil {
		return fmt.Errorf("list the servers of StatefulSet %s: %w", live.Name, err)
	}
	restarting := map[string]bool{}
	if mc.Status.Rollout != nil {
		for _, e := range mc.Status.Rollout.Servers {
			restarting[e.Name] = e.Restart != nil
		}
	}
	var failed error
	for _, p := range serverset.PodsOf(live, list.Items) {
		if _, ok := p.Labels[labels.Serving]; !ok && !restarting[p.Name] {
			failed = errors.Join(failed, r.labelServing(ctx, p.DeepCopy(), "true"))
		}
	}
	return failed
}

// selectsServing says whether a release manifest has a Service that selects labels.Serving.
func selectsServing(manifest string) bool {
	for _, svc := range helm.ObjectsOf[corev1.Service](manifest, "v1", "Service") {
		if _, ok := svc.Spec.Selector[labels.Serving]; ok {
			return true
		}
	}
	return false
}
