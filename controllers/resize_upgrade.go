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
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/memcached-operator/internal/helm"
	"github.com/example/memcached-operator/internal/labels"
	"github.com/example/memcached-operator/internal/memcache"
)

// The decision, before Helm applies an upgrade, whether its change of the servers is made in
// place or rolled out (see memcached_resize.go).

// BeforeUpgrade decides, before Helm applies an upgrade of a Memcached's release, whether the
// upgrade's change of the servers is made in place: then it holds the StatefulSet's rollout; else
// it records why not, and the StatefulSet rolls the servers.
func (r *MemcachedResizeReconciler) BeforeUpgrade(ctx context.Context, cr client.Object, last, target *helm.Rendered) error {
	if err := r.servingBeforeUpgrade(ctx, cr, target); err != nil {
		return err
	}
	if last == nil || !last.Deployed {
		return nil // a failed or pending release: what the servers run is not the last manifest's
	}
	from, to := statefulSetOf(last.Manifest), statefulSetOf(target.Manifest)
	if from == nil || to == nil || from.Name != to.Name {
		return nil
	}
	live := &appsv1.StatefulSet{}
	if err := r.Live.Get(ctx, client.ObjectKey{Namespace: cr.GetNamespace(), Name: to.Name}, live); err != nil {
		return client.IgnoreNotFound(err) // none yet: Helm creates it
	}
	if !helm.OwnedByRelease(live, cr) {
		return nil // Helm's own check refuses it
	}
	if rec := resizeRecordOf(live); rec != nil && rec.Outcome == outcomeResizing && partitionOf(live) > 0 {
		// A change in flight: the held servers run the template of release rec.Release. A new
		// change that can be made the same way (in place, or restarting warm) is Reconcile's to
		// take on; any other lets go of the servers before Helm applies it, so that none is ever
		// marked as running a template it does not.
		held, err := helm.Release(ctx, r.Client, r.Records, cr, rec.Release)
		if err != nil {
			return err
		}
		why := fmt.Sprintf("the record of release revision %d the servers run cannot be read", rec.Release)
		if ran := statefulSetOf(manifestOf(held)); ran != nil {
			plan := planTemplateChange(&ran.Spec.Template, &to.Spec.Template)
			if plan.way != WayStartedEmpty {
				return nil
			}
			why = plan.why
		}
		return r.letGo(ctx, cr, live, *rec, "another change came while the servers were changed in place ("+why+")")
	}
	plan := planTemplateChange(&from.Spec.Template, &to.Spec.Template)
	if plan.way == "" {
		return nil // the servers' template does not change: nothing to decide
	}
	why := plan.why
	if why == "" {
		why = r.inPlaceRefusal(live, plan)
	}
	// Since: when the servers are held, after the checks above (which read every server).
	record := resizeRecord{Release: last.Version, Revision: live.Status.CurrentRevision, FromMB: plan.before.MB, ToMB: plan.after.MB,
		FromLimit: plan.before.limit(), ToLimit: plan.after.limit(), Since: metav1.Now(), Way: plan.way, Change: plan.change(), Memory: plan.memory}
	patch := client.MergeFromWithOptions(live.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if why != "" {
		record.Way = WayStartedEmpty
		record.Outcome, record.Why, record.At = outcomeRolledOut, why, ptr.To(metav1.Now())
		metav1.SetMetaDataAnnotation(&live.ObjectMeta, labels.ResizeHold, record.annotation())
		if err := r.Patch(ctx, live, patch); err != nil {
			return fmt.Errorf("record why StatefulSet %s is rolled out: %w", live.Name, err)
		}
		r.announceRollout(cr, live, record)
		return nil
	}
	// Servers the upgrade adds (ordinals from the smaller of the two counts on) start with the
	// new template; the others are held.
	held := min(replicasOf(live), replicasOf(to))
	if held == 0 {
		return nil // no server to change
	}
	if live.Spec.UpdateStrategy.RollingUpdate == nil {
		live.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
	}
	live.Spec.UpdateStrategy.RollingUpdate.Partition = &held
	metav1.SetMetaDataAnnotation(&live.ObjectMeta, labels.ResizeHold, record.annotation())
	if err := r.Patch(ctx, live, patch); err != nil {
		return fmt.Errorf("hold the rollout of StatefulSet %s to change its servers in place: %w", live.Name, err)
	}
	switch {
	case plan.way == WayWarmRestart:
		r.Recorder.Eventf(cr, live, corev1.EventTypeNormal, WayWarmRestart, "ChangeServers",
			"%s: restarting %s one at a time in their pods, each with its items", record.what(), count(held, "server", "servers"))
	case plan.memory:
		r.Recorder.Eventf(cr, live, corev1.EventTypeNormal, ReasonResizingInPlace, "ResizeServers",
			"%s: resizing %s in place, without a restart", record.what(), count(held, "server", "servers"))
	default:
		r.Recorder.Eventf(cr, live, corev1.EventTypeNormal, WayInPlace, "ChangeServers",
			"%s: writing onto %s in place, without a restart", record.what(), count(held, "server", "servers"))
	}
	return nil
}

// announceRollout says, in an Event and the metrics, that a change of the servers rolls them out,
// each starting empty, and why.
func (r *MemcachedResizeReconciler) announceRollout(cr client.Object, servers *appsv1.StatefulSet, rec resizeRecord) {
	reason := WayStartedEmpty
	if rec.memoryChange() {
		reason = "ResizeByRollout"
		resizeMetrics.WithLabelValues("rollout").Inc()
	}
	r.Recorder.Eventf(cr, servers, corev1.EventTypeNormal, reason, "ChangeServers",
		"%s is rolled out one server at a time, each starting empty: %s", rec.what(), rec.Why)
	changeMetrics.WithLabelValues(wayMetric(WayStartedEmpty)).Inc()
}

// inPlaceRefusal says why the StatefulSet's servers cannot take the plan's change in place, or
// "" when they can: the last rollout must be complete (every server runs the revision the hold
// names), and for memory the cluster must resize pods. It asks the servers nothing: it runs on a
// Helm worker, which every tenant's installs share (a shrink's fit is checked by Reconcile).
func (r *MemcachedResizeReconciler) inPlaceRefusal(live *appsv1.StatefulSet, plan templatePlan) string {
	if plan.memory {
		ok, err := r.Support.inPlace()
		if err != nil {
			return fmt.Sprintf("the operator could not tell whether the cluster resizes pods in place: %v", err)
		}
		if !ok {
			return errNoResize
		}
	}
	ro := rolloutOfServers(live)
	if !ro.complete() || live.Status.CurrentRevision != live.Status.UpdateRevision {
		return fmt.Sprintf("the servers were still rolling out (%d of %d updated)", ro.updated, ro.want)
	}
	return ""
}

// shrinkRefusal says why the held servers cannot shrink in place to the item memory after, or ""
// when they can: each must hold no more than it (memcached keeps what it has allocated). All are
// asked at once, within one deadline for the cache.
func (r *MemcachedResizeReconciler) shrinkRefusal(ctx context.Context, pods []*corev1.Pod, after serverMemory) string {
	for _, p := range pods {
		if !podReady(p) || p.Status.PodIP == "" {
			return fmt.Sprintf("server %s is not ready, so what it holds is unknown", p.Name)
		}
	}
	for _, a := range askServers(ctx, pods, r.Reach, func(ctx context.Context, srv memcache.Server) (uint64, error) {
		return memcache.ReadAllocated(ctx, srv, cacheTimeout)
	}) {
		if a.err != nil {
			return fmt.Sprintf("a server did not say how much memory it holds: %v", a.err)
		}
		if a.answer > uint64(after.MB)<<20 {
			return fmt.Sprintf("server %s holds %d MiB, above the new %d MiB: memcached gives memory back only as its items expire or are deleted",
				a.pod.Name, a.answer>>20, after.MB)
		}
	}
	return ""
}
