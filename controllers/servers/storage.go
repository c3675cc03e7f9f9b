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
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/serverset"
	"github.com/example/memcached-operator/internal/rollout"
)

// A StatefulSet made again with other volume claim templates (persistence turned on or off,
// internal/helm/actionclient's replaceStatefulSets) adopts its running pods, but cannot give them
// the volumes it now has or take away those it no longer has: a pod's volumes cannot change, and
// its controller fails on each such pod ("pod updates may not change fields") instead of rolling
// it, and goes no further than the lowest one (it syncs the servers in slow-start batches from
// ordinal 0, and stops at a batch that fails). The operator replaces them: one server at a time,
// the lowest first, each only while every other server serves, through the eviction API (the
// PodDisruptionBudget has its say); the StatefulSet makes the server's pod again with its
// volumes, then stops at the next. Each starts empty once (its pod had no copy to restore), as
// the change's rollout recorded.

// evictionRetry is how soon an eviction the PodDisruptionBudget refused is tried again.
const evictionRetry = 5 * time.Second

// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create

// replaceForVolumes evicts the lowest server whose pod does not have the volumes of its
// StatefulSet's claim templates, when every server serves; it returns when to look again.
func (r *Reconciler) replaceForVolumes(ctx context.Context, mc *cachev1.Memcached, servers *appsv1.StatefulSet, list []corev1.Pod) (time.Duration, error) {
	if servers == nil || (mc.Status.Rollout != nil && rollout.InFlight(mc.Status.Rollout.Change)) {
		return 0, nil
	}
	pods := serverset.PodsOf(servers, list)
	var stale *corev1.Pod
	for n := range serverset.ReplicasOf(servers) {
		if p := pods[n]; p != nil && !hasClaimVolumes(servers, p) {
			stale = p
			break
		}
	}
	if stale == nil {
		return 0, nil
	}
	for n := range serverset.ReplicasOf(servers) {
		if p := pods[n]; p == nil || !serverset.PodReady(p) {
			return 0, nil // a server that does not serve: its readiness brings us back
		}
	}
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: stale.Namespace, Name: stale.Name},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &stale.UID}}}
	err := r.SubResource("eviction").Create(ctx, stale, eviction)
	switch {
	case apierrors.IsTooManyRequests(err):
		return evictionRetry, nil // the PodDisruptionBudget allows no disruption now
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return 0, nil // gone, or another pod already: its event brings us back
	case err != nil:
		return 0, fmt.Errorf("evict server %s for its volumes: %w", stale.Name, err)
	}
	r.Recorder.Eventf(mc, stale, corev1.EventTypeNormal, "ServerReplaced", "ReplaceServer",
		"server %s's pod runs without the volumes its StatefulSet now gives its servers (persistence turned on or off): it is evicted, one server at a time, and made again with them, starting empty", stale.Name)
	return 0, nil
}

// hasClaimVolumes says whether pod p has exactly the volumes the claim templates of its
// StatefulSet s give it (a volume named after each template, of the claim <template>-<pod>).
func hasClaimVolumes(s *appsv1.StatefulSet, p *corev1.Pod) bool {
	var want, have []string
	for _, t := range s.Spec.VolumeClaimTemplates {
		want = append(want, t.Name+"="+t.Name+"-"+p.Name)
	}
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == v.Name+"-"+p.Name {
			have = append(have, v.Name+"="+v.PersistentVolumeClaim.ClaimName)
		}
	}
	slices.Sort(want)
	slices.Sort(have)
	return slices.Equal(want, have)
}
