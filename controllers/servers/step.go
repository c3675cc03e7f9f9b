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
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/metrics"
	"github.com/example/memcached-operator/controllers/internal/serverset"
	"github.com/example/memcached-operator/controllers/internal/servertalk"
	"github.com/example/memcached-operator/controllers/internal/texts"
	"github.com/example/memcached-operator/internal/labels"
	"github.com/example/memcached-operator/internal/memcache"
	"github.com/example/memcached-operator/internal/rollout"
)

// One server's steps of a change in place (see rollout.go): its metadata, its memory (the
// kubelet's resize, memcached's own limit), its images (memcached's a warm restart in its pod),
// then the StatefulSet's revision on its pod.

// +kubebuilder:rbac:groups="",resources=pods/resize,verbs=patch

// serverStep is where updateServer took a server: done, or what it waits for, or why it cannot
// be changed in place (refusal: the servers are rolled out instead), or why it cannot be changed
// now (blocked).
type serverStep struct {
	done                      bool
	waiting, refusal, blocked string
}

// serverTarget is what each held server is taken to: the change, the template and memory after,
// and the StatefulSet's revision of that template.
type serverTarget struct {
	change *cachev1.ServersChange
	to     *corev1.PodTemplateSpec
	after  rollout.Memory
	update string
}

// updateServer takes server e (its pod, cached) one step towards the template after, from the
// template it runs: its labels and annotations, then its memory (resizeStep), then its images (a
// restart of that container in the pod, memcached's with its items, checked once it is back).
// When it runs the template after, its pod is labelled with the StatefulSet's update revision,
// and its entry says it runs the change's release.
func (r *Reconciler) updateServer(ctx context.Context, mc *cachev1.Memcached, rs *cachev1.RolloutStatus, e *cachev1.ServerRollout, cached *corev1.Pod, from *corev1.PodTemplateSpec, t serverTarget) (serverStep, error) {
	p := &corev1.Pod{}
	if err := r.Live.Get(ctx, client.ObjectKeyFromObject(cached), p); err != nil {
		return serverStep{waiting: fmt.Sprintf("server %s's pod is gone", cached.Name)}, client.IgnoreNotFound(err)
	}
	if p.UID != e.PodUID || p.DeletionTimestamp != nil {
		return serverStep{waiting: fmt.Sprintf("server %s's pod is being replaced", p.Name)}, nil
	}
	if _, ok := rollout.MemoryOf(&p.Spec); !ok {
		return serverStep{refusal: fmt.Sprintf("server %s has no memcached container with -m", p.Name)}, nil
	}
	restarts := rollout.RestartsOf(p, labels.ChartName)
	if e.Restart != nil {
		if images := rollout.ImagesToChange(p, t.to); len(images) > 0 && restarts <= e.Restarts {
			// The restart is recorded, but its images did not reach the pod (a write that
			// failed): out of the Service again, and the images once more.
			if err := r.setServing(ctx, p, false); err != nil {
				return serverStep{}, err
			}
			return serverStep{waiting: fmt.Sprintf("server %s's new image is being set", p.Name)}, r.patchImages(ctx, p, images)
		}
		if restarts <= e.Restarts || !serverset.PodReady(p) || p.Status.PodIP == "" {
			return serverStep{waiting: fmt.Sprintf("server %s's memcached is restarting in its pod", p.Name)}, nil
		}
		if ok, err := r.restarted(ctx, mc, e, p, t.change.Since); !ok || err != nil {
			return serverStep{waiting: fmt.Sprintf("asking server %s whether it restored its items%s", p.Name, errSuffix(err))}, nil
		}
	}
	if !serverset.PodReady(p) || p.Status.PodIP == "" {
		return serverStep{waiting: fmt.Sprintf("server %s is not ready", p.Name)}, nil
	}
	if podLabels, podAnnotations, changed := rollout.Metadata(p, from, t.to); changed {
		before := p.DeepCopy()
		p.Labels, p.Annotations = podLabels, podAnnotations
		if err := r.Live.Patch(ctx, p, client.MergeFrom(before)); err != nil {
			return serverStep{}, client.IgnoreNotFound(fmt.Errorf("write the labels and annotations of server %s: %w", p.Name, err))
		}
	}
	// Memory whenever the pod's differs from the template's (a server done for a change that a
	// second one took back), and memcached's limit with it for a change of memory.
	if has, _ := rollout.MemoryOf(&p.Spec); t.change.Memory != nil || !equality.Semantic.DeepEqual(has.Resources, t.after.Resources) {
		if step, err := r.resizeStep(ctx, mc, p, t.after); err != nil || !step.done {
			return step, err
		}
	}
	if images := rollout.ImagesToChange(p, t.to); len(images) > 0 {
		if _, ok := images[labels.ChartName]; !ok {
			return serverStep{waiting: fmt.Sprintf("server %s's exporter restarts with its new image", p.Name)}, r.patchImages(ctx, p, images)
		}
		// memcached restarts in its pod: what it holds, and the restart, are recorded first, so
		// that its return is checked whatever happens to this operator meanwhile.
		s, err, ok := r.readStats(mc, p, fmt.Sprintf("before restart %d", restarts))
		if !ok || err != nil {
			return serverStep{waiting: fmt.Sprintf("asking server %s what it holds before its restart%s", p.Name, errSuffix(err))}, nil
		}
		now := metav1.Now().Rfc3339Copy()
		e.Restart = &cachev1.ServerRestart{Items: int64(min(s.CurrItems, 1<<62)), ProcessStart: metav1.NewTime(s.Started()), Time: now}
		e.Restarts = restarts
		if err := r.writeRollout(ctx, mc, rs); err != nil {
			e.Restart = nil
			return serverStep{}, err
		}
		// Out of the ClusterIP Service before memcached stops (serving.go).
		if err := r.setServing(ctx, p, false); err != nil {
			return serverStep{}, err
		}
		return serverStep{waiting: fmt.Sprintf("server %s's memcached is restarting in its pod", p.Name)}, r.patchImages(ctx, p, images)
	}
	if p.Labels[appsv1.StatefulSetRevisionLabel] != t.update {
		before := p.DeepCopy()
		p.Labels[appsv1.StatefulSetRevisionLabel] = t.update
		if err := r.Live.Patch(ctx, p, client.MergeFrom(before)); err != nil {
			return serverStep{}, client.IgnoreNotFound(fmt.Errorf("label server %s with template revision %s: %w", p.Name, t.update, err))
		}
	}
	e.Release = t.change.ToRelease
	return serverStep{done: true}, nil
}

// restarted checks server e, whose memcached the operator restarted in its pod p and which runs
// and is ready again: whether memcached restored its items (it says so by its process's start,
// rollout.Restored). A server that did not is reported (an Event, the metric, its entry), unless
// it started empty already since the change began (its pod replaced: the true reason); either way
// it serves again. ok is false while memcached's answer has not come.
func (r *Reconciler) restarted(ctx context.Context, mc *cachev1.Memcached, e *cachev1.ServerRollout, p *corev1.Pod, since metav1.Time) (bool, error) {
	restarts := rollout.RestartsOf(p, labels.ChartName)
	s, err, ok := r.readStats(mc, p, fmt.Sprintf("after restart %d", restarts))
	if !ok || err != nil {
		return false, err
	}
	if why := rollout.Restored(p, s.Started()); why != "" {
		if e.StartedEmpty == nil || e.StartedEmpty.Time.Before(&since) {
			e.StartedEmpty = rollout.EmptyAfterRestart(fmt.Sprintf("it held %s before and %d after: %s", texts.Count(e.Restart.Items, "item", "items"), s.CurrItems, why), metav1.Now().Rfc3339Copy())
			r.Recorder.Eventf(mc, p, corev1.EventTypeWarning, cachev1.WayStartedEmpty, "RestartServer", "server %s started empty after its restart: %s", p.Name, e.StartedEmpty.Message)
			metrics.CountStartedEmpty(cachev1.EmptyNotRestored)
		}
	} else {
		log.FromContext(ctx).Info("server restarted with its items", "pod", p.Name, "items", s.CurrItems, "before", e.Restart.Items)
	}
	if err := r.setServing(ctx, p, true); err != nil {
		return false, err
	}
	e.Restart, e.Restarts = nil, restarts
	return true, nil
}

// errSuffix is ": err" for an error, "" for none.
func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

// patchImages sets the images of pod p's containers (container → image).
func (r *Reconciler) patchImages(ctx context.Context, p *corev1.Pod, images map[string]string) error {
	var containers []any
	for _, name := range slices.Sorted(maps.Keys(images)) {
		containers = append(containers, map[string]any{"name": name, "image": images[name]})
	}
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"containers": containers}})
	if err != nil {
		return err
	}
	if err := r.Live.Patch(ctx, p, client.RawPatch(types.StrategicMergePatchType, body)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("change the images of server %s: %w", p.Name, err)
	}
	log.FromContext(ctx).Info("server's images changed in its pod", "pod", p.Name, "images", images)
	return nil
}

// resizeStep takes one server one step towards the memory after: growing, the container first,
// then memcached; shrinking, memcached first. done once both hold it.
func (r *Reconciler) resizeStep(ctx context.Context, mc *cachev1.Memcached, p *corev1.Pod, after rollout.Memory) (serverStep, error) {
	now, _ := rollout.MemoryOf(&p.Spec)
	shrinking := after.MB < now.MB || quantityBelow(after.Resources.Limits, now.Resources.Limits)
	containerDone := equality.Semantic.DeepEqual(now.Resources, after.Resources)
	if shrinking || containerDone {
		// memcached first when shrinking; last when growing, once the container has its memory.
		if containerDone && !resized(p, after) {
			if why := resizeTrouble(p); why != "" {
				return serverStep{refusal: why}, nil
			}
			return serverStep{waiting: fmt.Sprintf("the kubelet has not resized server %s yet", p.Name)}, nil
		}
		pod := p.DeepCopy()
		_, err, ok := r.talk.Ask(client.ObjectKeyFromObject(mc), fmt.Sprintf("limit %s %d", p.UID, after.MB), func(ctx context.Context) (any, error) {
			return nil, r.setLimit(ctx, pod, after.MB)
		})
		if !ok || err != nil {
			return serverStep{waiting: fmt.Sprintf("setting memcached's item memory on server %s to %d MiB%s", p.Name, after.MB, errSuffix(err))}, nil
		}
	}
	if containerDone {
		return serverStep{done: true}, nil
	}
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"name": labels.ChartName, "resources": after.Resources}}}})
	if err != nil {
		return serverStep{}, err
	}
	if err := r.Live.SubResource("resize").Patch(ctx, p, client.RawPatch(types.StrategicMergePatchType, body)); err != nil {
		switch {
		case apierrors.IsNotFound(err) && podGone(err, p.Name), apierrors.IsConflict(err):
			return serverStep{waiting: fmt.Sprintf("server %s changed while it was resized", p.Name)}, nil
		case apierrors.IsNotFound(err):
			return serverStep{refusal: errNoResize}, nil
		case apierrors.IsForbidden(err):
			return serverStep{blocked: fmt.Sprintf("the API server refused to resize server %s: %v", p.Name, err)}, nil
		case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsMethodNotSupported(err):
			return serverStep{refusal: fmt.Sprintf("the API server refused to resize server %s: %v", p.Name, err)}, nil
		}
		return serverStep{}, fmt.Errorf("resize server %s: %w", p.Name, err)
	}
	return serverStep{waiting: fmt.Sprintf("the kubelet resizes server %s", p.Name)}, nil // its status update brings us back
}

// podGone reports whether a NotFound error is about the pod named name (rather than the resize
// subresource, which an API server that does not serve it answers with a NotFound of its own).
func podGone(err error, name string) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Name == name
}

// resized reports whether the kubelet runs the pod's memcached container with the resources
// after: it reports them in the container's status, has seen the pod's latest spec, and has no
// resize pending or in progress.
func resized(p *corev1.Pod, after rollout.Memory) bool {
	if p.Status.ObservedGeneration != 0 && p.Status.ObservedGeneration < p.Generation {
		return false
	}
	for _, c := range p.Status.Conditions {
		if (c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress) && c.Status == corev1.ConditionTrue {
			return false
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == labels.ChartName {
			return cs.Resources != nil && equality.Semantic.DeepEqual(*cs.Resources, after.Resources)
		}
	}
	return false
}

// resizeTrouble says why a kubelet will not resize a pod: "" while it may yet.
func resizeTrouble(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodResizePending && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonInfeasible {
			return fmt.Sprintf("the kubelet cannot resize server %s: %s", p.Name, c.Message)
		}
	}
	return ""
}

// quantityBelow reports whether a's memory is below b's.
func quantityBelow(a, b corev1.ResourceList) bool {
	x, okA := a[corev1.ResourceMemory]
	y, okB := b[corev1.ResourceMemory]
	return okA && okB && x.Cmp(y) < 0
}

// readStats asks pod p's memcached for its stats, off the workers (conversations); when names
// the moment (the answer is for that moment's question alone). ok is false until it answers.
func (r *Reconciler) readStats(mc *cachev1.Memcached, p *corev1.Pod, when string) (memcache.Stats, error, bool) {
	pod := p.DeepCopy()
	v, err, ok := r.talk.Ask(client.ObjectKeyFromObject(mc), fmt.Sprintf("stats %s %s", p.UID, when), func(ctx context.Context) (any, error) {
		srv, err := r.Reach.Server(ctx, pod)
		if err != nil {
			return nil, err
		}
		return memcache.ReadStats(ctx, srv, servertalk.CacheTimeout)
	})
	if !ok || err != nil {
		return memcache.Stats{}, err, ok
	}
	return v.(memcache.Stats), nil, true
}

// setLimit makes the memcached of pod p run with mb MiB of item memory, unless it does already.
func (r *Reconciler) setLimit(ctx context.Context, p *corev1.Pod, mb int32) error {
	srv, err := r.Reach.Server(ctx, p)
	if err == nil {
		err = setLimitAt(ctx, srv, mb)
	}
	if err != nil {
		return fmt.Errorf("server %s: %w", p.Name, err)
	}
	return nil
}

// setLimitAt makes the memcached srv run with mb MiB of item memory, unless it does already:
// both exchanges within one servertalk.CacheTimeout.
func setLimitAt(ctx context.Context, srv memcache.Server, mb int32) error {
	ctx, cancel := context.WithTimeout(ctx, servertalk.CacheTimeout)
	defer cancel()
	s, err := memcache.ReadStats(ctx, srv, servertalk.CacheTimeout)
	if err != nil {
		return fmt.Errorf("read the stats: %w", err)
	}
	if s.LimitMaxBytes == uint64(mb)<<20 {
		return nil
	}
	if err := memcache.SetMemoryLimit(ctx, srv, mb, servertalk.CacheTimeout); err != nil {
		return fmt.Errorf("set the item memory to %d MiB: %w", mb, err)
	}
	log.FromContext(ctx).Info("memcached's item memory set in place", "addr", srv.Addr, "MiB", mb)
	return nil
}

// limitsToKeep are the servers resized in place whose memcached restarted since (a crash, a
// failed liveness probe): their arguments still say the -m they were created with, and memcached
// must be told the template's again. Only where the container has the memory the StatefulSet's
// template gives.
func limitsToKeep(servers *appsv1.StatefulSet, pods map[int32]*corev1.Pod) ([]*corev1.Pod, int32) {
	want, ok := rollout.MemoryOf(&servers.Spec.Template.Spec)
	if !ok || servers.Status.UpdateRevision == "" {
		return nil, 0
	}
	var out []*corev1.Pod
	for _, p := range pods {
		if p.Labels[appsv1.StatefulSetRevisionLabel] != servers.Status.UpdateRevision || !serverset.PodReady(p) || p.Status.PodIP == "" {
			continue
		}
		has, ok := rollout.MemoryOf(&p.Spec)
		if !ok || has.MB == want.MB || !equality.Semantic.DeepEqual(has.Resources, want.Resources) {
			continue // created with the template's -m, or not resized to the template
		}
		out = append(out, p)
	}
	return out, want.MB
}

// keepLimits sets memcached's limit on the servers limitsToKeep finds, all at once within one
// deadline, off the workers; false until that is done. Once done for these servers and their
// restarts, it is not asked again until one of them restarts (limitsKept); after a failure, not
// before blockedRetry.
func (r *Reconciler) keepLimits(mc *cachev1.Memcached, pods []*corev1.Pod, mb int32) bool {
	var servers []string
	for i, p := range pods {
		pods[i] = p.DeepCopy()
		servers = append(servers, fmt.Sprintf("%s/%d", p.UID, rollout.RestartsOf(p, labels.ChartName)))
	}
	slices.Sort(servers)
	key, question := client.ObjectKeyFromObject(mc), fmt.Sprintf("limit %d of %v", mb, servers)
	if v, ok := r.limitsKept.Load(key); ok {
		if kept := v.(keptLimit); kept.question == question && (kept.err == nil || time.Since(kept.at) < blockedRetry) {
			return kept.err == nil
		}
	}
	_, err, ok := r.talk.Ask(key, question, func(ctx context.Context) (any, error) {
		var failed error
		for _, a := range servertalk.Ask(ctx, pods, r.Reach, func(ctx context.Context, srv memcache.Server) (struct{}, error) {
			return struct{}{}, setLimitAt(ctx, srv, mb)
		}) {
			failed = errors.Join(failed, a.Err)
		}
		return nil, failed
	})
	if ok {
		r.limitsKept.Store(key, keptLimit{question: question, err: err, at: time.Now()})
	}
	return ok && err == nil
}

// keptLimit is keepLimits' last answer for a cache.
type keptLimit struct {
	question string
	err      error
	at       time.Time
}
