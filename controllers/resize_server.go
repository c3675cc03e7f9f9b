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

package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/labels"
	"github.com/example/memcached-operator/internal/memcache"
)

// One server's step of an in-place change (see memcached_resize.go): its metadata, images,
// warm restart, the kubelet's resize, and memcached's own limit (cache_memlimit).

// serverStep is where updateServer took a server: done, or why it cannot be changed in place
// (refusal: the servers are rolled out instead), or why it cannot be changed now (blocked).
type serverStep struct {
	done             bool
	refusal, blocked string
}

// updateServer takes one server one step towards the template after: its labels and
// annotations, then its memory (resizeStep), then its images (a restart of that container in the
// pod, memcached's with its items). When it runs the template after, the pod is labelled with the
// StatefulSet's update revision and done is true. refusal says why the server cannot be changed
// in place.
func (r *MemcachedResizeReconciler) updateServer(ctx context.Context, mc *cachev1.Memcached, servers *appsv1.StatefulSet, rec *resizeRecord, cached *corev1.Pod, change serverChange) (serverStep, error) {
	p := &corev1.Pod{}
	if err := r.Live.Get(ctx, client.ObjectKeyFromObject(cached), p); err != nil {
		return serverStep{}, client.IgnoreNotFound(err)
	}
	if p.UID != cached.UID || p.DeletionTimestamp != nil {
		return serverStep{}, nil
	}
	if _, ok := memoryOf(&p.Spec); !ok {
		return serverStep{refusal: fmt.Sprintf("server %s has no memcached container with -m", p.Name)}, nil
	}
	if rec.Restart != nil && rec.Restart.Server == p.Name {
		if images := imagesToChange(p, change.plan.images); len(images) > 0 && restartsOf(p, labels.ChartName) <= rec.Restart.Restarts {
			// The restart is recorded, but its images did not reach the pod (a write that
			// failed): out of the Service again, and the images once more.
			if err := r.setServing(ctx, p, false); err != nil {
				return serverStep{}, err
			}
			return serverStep{}, r.patchImages(ctx, p, images)
		}
		if done, err := r.restarted(ctx, change.talk, mc, servers, rec, p); !done || err != nil {
			return serverStep{}, err
		}
	}
	if !podReady(p) || p.Status.PodIP == "" {
		return serverStep{}, nil // its readiness brings us back
	}
	if change.plan.metadata {
		if err := r.writeMetadata(ctx, p, change); err != nil {
			return serverStep{}, err
		}
	}
	if change.plan.memory {
		if step, err := r.resizeStep(ctx, change.talk, p, change.plan.after); err != nil || !step.done {
			return step, err
		}
	}
	if images := imagesToChange(p, change.plan.images); len(images) > 0 {
		return serverStep{}, r.changeImages(ctx, change.talk, servers, rec, p, images)
	}
	before := p.DeepCopy()
	p.Labels[appsv1.StatefulSetRevisionLabel] = change.update
	if err := r.Live.Patch(ctx, p, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return serverStep{}, nil
		}
		return serverStep{}, fmt.Errorf("label server %s with template revision %s: %w", p.Name, change.update, err)
	}
	return serverStep{done: true}, nil
}

// writeMetadata writes the labels and annotations of the template after onto the running pod p:
// those the template before had and the one after has not go, the others take the new values;
// what others wrote on the pod (the StatefulSet controller's labels) stays.
func (r *MemcachedResizeReconciler) writeMetadata(ctx context.Context, p *corev1.Pod, change serverChange) error {
	before := p.DeepCopy()
	p.Labels = movedMap(p.Labels, change.from.Labels, change.to.Labels)
	p.Annotations = movedMap(p.Annotations, change.from.Annotations, change.to.Annotations)
	if maps.Equal(p.Labels, before.Labels) && maps.Equal(p.Annotations, before.Annotations) {
		return nil
	}
	if err := r.Live.Patch(ctx, p, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			*p = *before
			return nil // looked at again on the pod's next event
		}
		return fmt.Errorf("write the labels and annotations of server %s: %w", p.Name, err)
	}
	return nil
}

// movedMap is have with the keys of was that will lacks removed and the entries of will set.
func movedMap(have, was, will map[string]string) map[string]string {
	out := maps.Clone(have)
	if out == nil {
		out = map[string]string{}
	}
	for k := range was {
		if _, ok := will[k]; !ok {
			delete(out, k)
		}
	}
	maps.Copy(out, will)
	return out
}

// imagesToChange are the containers of pod p whose image is not yet the one images (container →
// image) names.
func imagesToChange(p *corev1.Pod, images map[string]string) map[string]string {
	out := map[string]string{}
	for name, img := range images {
		if c := containerNamed(&p.Spec, name); c != nil && c.Image != img {
			out[name] = img
		}
	}
	return out
}

// changeImages changes the images of pod p's containers (the kubelet restarts each in the pod,
// which keeps its address and its memory file). Before memcached's own restarts, the record says
// which server restarts and how many items it held, so that its return can be checked.
func (r *MemcachedResizeReconciler) changeImages(ctx, talk context.Context, servers *appsv1.StatefulSet, rec *resizeRecord, p *corev1.Pod, images map[string]string) error {
	if _, ok := images[labels.ChartName]; ok {
		s, err := r.readStats(talk, p)
		if err != nil {
			return fmt.Errorf("read the stats of server %s before its restart: %w", p.Name, err)
		}
		rec.Restart = &serverRestart{Server: p.Name, Items: s.CurrItems, Restarts: restartsOf(p, labels.ChartName), At: metav1.Now()}
		if err := r.record(ctx, servers, *rec); err != nil {
			return err
		}
		// Out of the ClusterIP Service before memcached stops (servers_serving.go).
		if err := r.setServing(ctx, p, false); err != nil {
			return err
		}
	}
	return r.patchImages(ctx, p, images)
}

// patchImages sets the images of pod p's containers (container → image).
func (r *MemcachedResizeReconciler) patchImages(ctx context.Context, p *corev1.Pod, images map[string]string) error {
	var containers []any
	for _, name := range slices.Sorted(maps.Keys(images)) {
		containers = append(containers, map[string]any{"name": name, "image": images[name]})
	}
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"containers": containers}})
	if err != nil {
		return err
	}
	if err := r.Live.Patch(ctx, p, client.RawPatch(types.StrategicMergePatchType, body)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("change the images of server %s: %w", p.Name, err)
	}
	log.FromContext(ctx).Info("server's images changed in its pod", "pod", p.Name, "images", images)
	return nil
}

// restarted checks the server whose memcached the record says restarts: done once it runs again,
// ready, with the items it held (WarmRestart), or without (StartedEmpty, with an Event and the
// metric). The record then moves on.
func (r *MemcachedResizeReconciler) restarted(ctx, talk context.Context, mc *cachev1.Memcached, servers *appsv1.StatefulSet, rec *resizeRecord, p *corev1.Pod) (bool, error) {
	if restartsOf(p, labels.ChartName) <= rec.Restart.Restarts || !podReady(p) || p.Status.PodIP == "" {
		return false, nil // the kubelet's report brings us back
	}
	s, err := r.readStats(talk, p)
	if err != nil {
		return false, fmt.Errorf("read the stats of server %s after its restart: %w", p.Name, err)
	}
	was := rec.Restart.Items
	if why := notRestored(was, s.CurrItems); why != "" {
		if rec.Empty == nil {
			rec.Empty = map[string]string{}
		}
		rec.Empty[p.Name] = why
		r.Recorder.Eventf(mc, p, corev1.EventTypeWarning, WayStartedEmpty, "RestartServer", "server %s started empty after its restart: %s", p.Name, why)
		startedEmptyMetrics.WithLabelValues(emptyNotRestored).Inc()
	} else {
		rec.Warm = append(rec.Warm, p.Name)
		log.FromContext(ctx).Info("server restarted with its items", "pod", p.Name, "items", s.CurrItems, "before", was)
	}
	if err := r.setServing(ctx, p, true); err != nil {
		return false, err
	}
	rec.Restart, rec.Progress = nil, ptr.To(metav1.Now())
	return true, r.record(ctx, servers, *rec)
}

// notRestored says why a memcached that held was items before its restart and holds now after it
// did not restore them, or "" when it did: a restored memcached holds them all, bar the few that
// expired meanwhile; one that started empty holds only what clients stored since.
func notRestored(was, now uint64) string {
	if was == 0 || now*2 >= was {
		return ""
	}
	return fmt.Sprintf("it held %d items before and %d after: memcached did not restore its memory file (not saved at the stop, or saved by a memcached of other settings)", was, now)
}

// restartsOf is the restart count of a pod's container.
func restartsOf(p *corev1.Pod, container string) int32 {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container {
			return cs.RestartCount
		}
	}
	return 0
}

// resizeStep takes one server one step towards the memory after: growing, the container first,
// then memcached; shrinking, memcached first. done once both hold it.
func (r *MemcachedResizeReconciler) resizeStep(ctx, talk context.Context, p *corev1.Pod, after serverMemory) (serverStep, error) {
	now, _ := memoryOf(&p.Spec)
	shrinking := after.MB < now.MB || quantityBelow(after.Resources.Limits, now.Resources.Limits)
	containerDone := equality.Semantic.DeepEqual(now.Resources, after.Resources)
	if shrinking || containerDone {
		// memcached first when shrinking; last when growing, once the container has its memory.
		if containerDone && !resized(p, after) {
			log.FromContext(ctx).V(1).Info("waiting for the kubelet to resize", "pod", p.Name, "generation", p.Generation,
				"observedGeneration", p.Status.ObservedGeneration, "status", resizeStatus(p), "want", after.Resources)
			return serverStep{refusal: resizeTrouble(p)}, nil
		}
		if err := r.setLimit(talk, p, after.MB); err != nil {
			return serverStep{}, err
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
			return serverStep{}, nil
		case apierrors.IsNotFound(err):
			return serverStep{refusal: errNoResize}, nil
		case apierrors.IsForbidden(err):
			return serverStep{blocked: fmt.Sprintf("the API server refused to resize server %s: %v", p.Name, err)}, nil
		case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsMethodNotSupported(err):
			return serverStep{refusal: fmt.Sprintf("the API server refused to resize server %s: %v", p.Name, err)}, nil
		}
		return serverStep{}, fmt.Errorf("resize server %s: %w", p.Name, err)
	}
	return serverStep{}, nil // the kubelet's status update brings us back
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
func resized(p *corev1.Pod, after serverMemory) bool {
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

// resizeTrouble says why a kubelet will not resize a pod: "" while it may yet (the pod waits,
// and resizeTimeout bounds the wait).
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

// readStats reads the stats of pod p's memcached.
func (r *MemcachedResizeReconciler) readStats(ctx context.Context, p *corev1.Pod) (memcache.Stats, error) {
	srv, err := r.Reach.server(ctx, p)
	if err != nil {
		return memcache.Stats{}, err
	}
	return memcache.ReadStats(ctx, srv, cacheTimeout)
}

// setLimit makes the memcached of pod p run with mb MiB of item memory, unless it does already.
func (r *MemcachedResizeReconciler) setLimit(ctx context.Context, p *corev1.Pod, mb int32) error {
	srv, err := r.Reach.server(ctx, p)
	if err == nil {
		err = setLimitAt(ctx, srv, mb)
	}
	if err != nil {
		return fmt.Errorf("server %s: %w", p.Name, err)
	}
	return nil
}

// setLimitAt makes the memcached srv run with mb MiB of item memory, unless it does already:
// both exchanges within one cacheTimeout.
func setLimitAt(ctx context.Context, srv memcache.Server, mb int32) error {
	ctx, cancel := context.WithTimeout(ctx, cacheTimeout)
	defer cancel()
	s, err := memcache.ReadStats(ctx, srv, cacheTimeout)
	if err != nil {
		return fmt.Errorf("read the stats: %w", err)
	}
	if s.LimitMaxBytes == uint64(mb)<<20 {
		return nil
	}
	if err := memcache.SetMemoryLimit(ctx, srv, mb, cacheTimeout); err != nil {
		return fmt.Errorf("set the item memory to %d MiB: %w", mb, err)
	}
	log.FromContext(ctx).Info("memcached's item memory set in place", "addr", srv.Addr, "MiB", mb)
	return nil
}

// keepLimits sets memcached's limit on the servers that were resized in place and whose memcached
// restarted since (a crash, a failed liveness probe): their arguments still say the -m they were
// created with. Only where the container has the memory the StatefulSet's template gives.
func (r *MemcachedResizeReconciler) keepLimits(ctx context.Context, servers *appsv1.StatefulSet) error {
	want, ok := memoryOf(&servers.Spec.Template.Spec)
	if !ok || servers.Status.UpdateRevision == "" {
		return nil
	}
	pods, err := r.serverPods(ctx, servers)
	if err != nil {
		return err
	}
	var resized []*corev1.Pod
	for _, p := range pods {
		if p.Labels[appsv1.StatefulSetRevisionLabel] != servers.Status.UpdateRevision || !podReady(p) || p.Status.PodIP == "" {
			continue
		}
		has, ok := memoryOf(&p.Spec) // the cache keeps the memcached container's args and resources
		if !ok || has.MB == want.MB || !equality.Semantic.DeepEqual(has.Resources, want.Resources) {
			continue // created with the template's -m, or not resized to the template
		}
		resized = append(resized, p)
	}
	var failed error
	for _, a := range askServers(ctx, resized, r.Reach, func(ctx context.Context, srv memcache.Server) (struct{}, error) {
		return struct{}{}, setLimitAt(ctx, srv, want.MB)
	}) {
		failed = errors.Join(failed, a.err) // tried again with the error's back-off
	}
	return failed
}
