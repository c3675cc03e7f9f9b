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

// Package autopilot is the controller that sizes a cache from memcached's own figures within the
// bounds of spec.autoscaling (Auto Pilot), recording its choice in status.autopilot.
package autopilot

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/autopilotsize"
	"github.com/example/memcached-operator/controllers/internal/managercache"
	"github.com/example/memcached-operator/controllers/internal/memcachedstatus"
	"github.com/example/memcached-operator/controllers/internal/metrics"
	"github.com/example/memcached-operator/controllers/internal/serverset"
	"github.com/example/memcached-operator/controllers/internal/servertalk"
	"github.com/example/memcached-operator/controllers/internal/texts"
	"github.com/example/memcached-operator/internal/memcache"
	"github.com/example/memcached-operator/internal/rollout"
)

// The autopilot (spec.autoscaling; docs/autopilot.md) sizes a Memcached from memcached's own
// figures, which the stats controller reads: sustained evictions grow each server's item memory in
// place (doubling it, up to maxMemoryMB), then add a server (up to maxReplicas); sustained low use
// without evictions removes the highest server (down to minReplicas), then halves the memory in
// place (down to memcached.maxMemoryMB, and only as far as memcached holds less). One step per
// coolDown, none while servers roll out or resize. Its choice is status.autopilot, which the
// values translation renders in place of replicaCount and memcached.maxMemoryMB: the spec stays
// what the user asked, and an operator restart or upgrade renders the same. A step the
// namespace's ResourceQuota would refuse is not taken, and the condition ScalingLimited says so.

// Steps of the autopilot (the metric's step label, and the Events' reasons).
const (
	stepGrowMemory   = "grow_memory"
	stepAddServer    = "add_server"
	stepRemoveServer = "remove_server"
	stepShrinkMemory = "shrink_memory"
)

// Reconciler is the autopilot: on each change of a Memcached's figures
// (status.stats), spec or conditions, it decides whether to take a step, and records its choice
// and why in status, an Event and metrics.
type Reconciler struct {
	client.Client
	Recorder events.EventRecorder
	// Reach is how the operator reaches the servers: a shrink asks each how much memory it holds.
	Reach *servertalk.Reach
	// StatsInterval is how often the stats controller reads the servers: figures must last two
	// reads before a step.
	StatsInterval time.Duration
	// Now is the clock (time.Now if nil).
	Now func() time.Time
	// talk has the conversations with the servers held off the workers.
	talk *servertalk.Conversations
}

// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=get;list;watch

// Reconcile decides and records the autopilot's next step for one Memcached.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	mc := &cachev1.Memcached{}
	if err := r.Get(ctx, req.NamespacedName, mc); err != nil || mc.DeletionTimestamp != nil {
		if apierrors.IsNotFound(err) || err == nil {
			metrics.Autopilot.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	st := mc.Status.DeepCopy()
	var step *autopilotStep
	var recheck time.Duration
	if !autopilotsize.On(&mc.Spec) {
		if st.Autopilot == nil {
			return ctrl.Result{}, nil
		}
		st.Autopilot = nil
		memcachedstatus.SetCondition(st, cachev1.ConditionScalingActive, metav1.ConditionFalse, "AutoscalingOff",
			fmt.Sprintf("spec.autoscaling is off: the cache has replicaCount %s of %d MiB (memcached.maxMemoryMB)", texts.Count(ptr.Deref(mc.Spec.ReplicaCount, 1), "server", "servers"), autopilotsize.SpecMaxMemoryMB(&mc.Spec)))
		memcachedstatus.RemoveCondition(st, cachev1.ConditionScalingLimited)
	} else {
		var err error
		if step, recheck, err = r.decide(ctx, mc, st); errors.Is(err, servertalk.ErrTenantBusy) {
			return ctrl.Result{RequeueAfter: servertalk.TenantRetry}, nil // another of the namespace's caches asks its servers now
		} else if err != nil {
			return ctrl.Result{}, err
		}
	}
	if !equality.Semantic.DeepEqual(*st, mc.Status) {
		notes, on := r.notes(mc, mc.Status, *st, step), ""
		if len(notes) > 0 {
			// A step, and what is said of it, is decided on what was read: never twice from a
			// cache that does not show the last write yet (the write conflicts, and is looked at
			// again).
			on = mc.ResourceVersion
		}
		written, err := memcachedstatus.AutopilotWriter.WriteOn(ctx, r.Client, mc, st, on)
		if written != "" { // what st says is live (err: only the trim after it failed)
			mc.Status = *st
			for _, note := range notes {
				note()
			}
		}
		if err != nil {
			// A conflict is looked at again without an error: say it, so that a cache whose
			// writes keep losing the race shows in the log.
			log.FromContext(ctx).V(1).Info("status write not made", "onResourceVersion", on, "error", err.Error())
			return memcachedstatus.AfterWriteError(err)
		}
	}
	metrics.Autopilot.Set(req.NamespacedName, st.Autopilot)
	return ctrl.Result{RequeueAfter: recheck}, nil
}

// autopilotStep is a step the autopilot takes.
type autopilotStep struct {
	kind string
	why  string
}

// decide updates st with what the figures say and, when a step is due, the step.
func (r *Reconciler) decide(ctx context.Context, mc *cachev1.Memcached, st *cachev1.MemcachedStatus) (*autopilotStep, time.Duration, error) {
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	b := autopilotsize.BoundsOf(&mc.Spec)
	if b.Invalid != "" {
		// The cache keeps the size the autopilot chose last (none: the spec's), rather than
		// dropping to the spec's at once; it steps no more until the bounds allow a size.
		kept := "the spec's size applies"
		if st.Autopilot != nil {
			kept = fmt.Sprintf("the cache keeps its size (%s of %d MiB) and steps no more", texts.Count(st.Autopilot.Replicas, "server", "servers"), st.Autopilot.MaxMemoryMB)
			st.Autopilot.EvictingSince, st.Autopilot.LowUseSince = nil, nil
		}
		memcachedstatus.SetCondition(st, cachev1.ConditionScalingActive, metav1.ConditionFalse, "InvalidBounds", b.Invalid+": "+kept)
		memcachedstatus.SetCondition(st, cachev1.ConditionScalingLimited, metav1.ConditionTrue, "InvalidBounds", b.Invalid)
		return nil, 0, nil
	}
	replicas, mb, _ := autopilotsize.Of(&mc.Spec, st.Autopilot)
	ap := &cachev1.AutopilotStatus{Replicas: replicas, MaxMemoryMB: mb}
	if st.Autopilot != nil {
		ap = st.Autopilot.DeepCopy()
		ap.Replicas, ap.MaxMemoryMB = replicas, mb // within the bounds as they are now
	}
	st.Autopilot = ap

	stats := st.Stats
	if stats == nil {
		ap.EvictingSince, ap.LowUseSince = nil, nil
		memcachedstatus.SetCondition(st, cachev1.ConditionScalingActive, metav1.ConditionFalse, "NoStats",
			"no server's stats could be read: the autopilot waits for them")
		return nil, 0, nil
	}
	evictions := 0.0
	if stats.EvictionsPerSecond != nil {
		evictions = stats.EvictionsPerSecond.AsApproximateFloat64()
	}
	t := metav1.NewTime(now)
	evicting := stats.EvictionsPerSecond != nil && evictions >= b.Evictions
	lowUse := stats.EvictionsPerSecond != nil && evictions == 0 && stats.MemoryUsedPercent < b.BelowPercent
	switch {
	case !evicting:
		ap.EvictingSince = nil
	case ap.EvictingSince == nil:
		ap.EvictingSince = &t
	}
	switch {
	case !lowUse:
		ap.LowUseSince = nil
	case ap.LowUseSince == nil:
		ap.LowUseSince = &t
	}
	figures := fmt.Sprintf("%s of %d MiB; %s evictions/s, the fullest server uses %d%%", texts.Count(ap.Replicas, "server", "servers"), ap.MaxMemoryMB,
		texts.PerSecond(evictions), stats.MemoryUsedPercent)

	busy, err := r.busyWith(ctx, mc, st, ap)
	if err != nil {
		return nil, 0, err
	}
	if busy != "" {
		// Figures read while servers change are not the new size's: the evidence starts over
		// once the work is done.
		ap.EvictingSince, ap.LowUseSince = nil, nil
		if evicting || lowUse {
			memcachedstatus.SetCondition(st, cachev1.ConditionScalingActive, metav1.ConditionTrue, "Waiting",
				fmt.Sprintf("%s; no step while %s", figures, busy))
			return nil, 0, nil // the work's end changes the conditions, which brings us back
		}
	}

	// What is due, and when it will be. The figures must have lasted at least two reads of the
	// stats, so that a step never rests on one read.
	var due string
	var at time.Time
	switch {
	case evicting:
		due, at = "up", ap.EvictingSince.Add(max(b.ScaleUpAfter, 2*r.StatsInterval))
	case lowUse:
		due, at = "in", ap.LowUseSince.Add(max(b.ScaleInAfter, 2*r.StatsInterval))
	}
	if ap.LastStepTime != nil && ap.LastStepTime.Add(b.CoolDown).After(at) {
		at = ap.LastStepTime.Add(b.CoolDown)
	}
	switch {
	case due == "":
		memcachedstatus.SetCondition(st, cachev1.ConditionScalingActive, metav1.ConditionTrue, "WithinBounds",
			fmt.Sprintf("%s: the cache fits what its clients store", figures))
		memcachedstatus.SetCondition(st, cachev1.ConditionScalingLimited, metav1.ConditionFalse, "WithinBounds", "no step is due")
		return nil, 0, nil
	case at.After(now):
		// A time, not a countdown: the message stays the same until something changes.
		memcachedstatus.SetCondition(st, cachev1.ConditionScalingActive, metav1.ConditionTrue, "Waiting",
			fmt.Sprintf("%s; a step %s is due at %s if this lasts", figures, due, at.UTC().Format(time.RFC3339)))
		return nil, at.Sub(now), nil
	}

	step, next, limited, err := r.nextStep(ctx, mc, b, ap, due, figures)
	if err != nil {
		return nil, 0, err
	}
	if step == nil && limited == nil {
		memcachedstatus.SetCondition(st, cachev1.ConditionScalingActive, metav1.ConditionTrue, "AtMinimum",
			fmt.Sprintf("%s: the cache is at its least size (minReplicas %d, memcached.maxMemoryMB %d)", figures, b.MinReplicas, b.FloorMB))
		memcachedstatus.SetCondition(st, cachev1.ConditionScalingLimited, metav1.ConditionFalse, "WithinBounds", "no step is due")
		return nil, 0, nil
	}
	if limited != nil {
		memcachedstatus.SetCondition(st, cachev1.ConditionScalingActive, metav1.ConditionTrue, "Limited", figures)
		memcachedstatus.SetCondition(st, cachev1.ConditionScalingLimited, metav1.ConditionTrue, limited.reason, limited.message)
		// Not retried in a loop: the next read of the figures, a change of the spec or of the
		// quota looks again.
		return nil, 0, nil
	}
	ap.Replicas, ap.MaxMemoryMB = next.Replicas, next.MaxMemoryMB
	ap.LastStep, ap.LastStepTime = step.why, &t
	ap.EvictingSince, ap.LowUseSince = nil, nil // the next step waits for figures of the new size
	memcachedstatus.SetCondition(st, cachev1.ConditionScalingActive, metav1.ConditionTrue, "Stepped", step.why)
	memcachedstatus.SetCondition(st, cachev1.ConditionScalingLimited, metav1.ConditionFalse, "WithinBounds", "the step was within the bounds and the quota")
	return step, b.CoolDown, nil
}

// busyWith says what work in flight a step must wait for: the size chosen last not deployed yet
// (the StatefulSet has not its servers or their memory), a rollout, a resize, servers not ready.
func (r *Reconciler) busyWith(ctx context.Context, mc *cachev1.Memcached, st *cachev1.MemcachedStatus, ap *cachev1.AutopilotStatus) (string, error) {
	servers, err := serverset.Of(ctx, r.Client, mc)
	if err != nil {
		return "", err
	}
	if servers == nil {
		return "the servers are not made yet", nil
	}
	if m, ok := rollout.MemoryOf(&servers.Spec.Template.Spec); serverset.ReplicasOf(servers) != ap.Replicas || !ok || m.MB != ap.MaxMemoryMB {
		return "the size chosen last is not deployed yet", nil
	}
	if c := memcachedstatus.Condition(*st, cachev1.ConditionResizing); c.Status == metav1.ConditionTrue {
		return "the servers are resized", nil
	}
	if c := memcachedstatus.Condition(*st, cachev1.ConditionProgressing); c.Status == metav1.ConditionTrue {
		return "the servers roll out", nil
	}
	if c := memcachedstatus.Condition(*st, cachev1.ConditionAvailable); c.Status != metav1.ConditionTrue {
		return "not every server is available", nil
	}
	if st.Stats == nil || st.Stats.Pods != ap.Replicas {
		return "not every server's stats are read", nil
	}
	return "", nil
}

// limit is why a due step is not taken.
type limit struct {
	reason, message, metric string
}

// nextStep is the step due in direction ("up" or "in") within the bounds and the quota.
func (r *Reconciler) nextStep(ctx context.Context, mc *cachev1.Memcached, b autopilotsize.Bounds, ap *cachev1.AutopilotStatus, direction, figures string) (*autopilotStep, cachev1.AutopilotStatus, *limit, error) {
	next := cachev1.AutopilotStatus{Replicas: ap.Replicas, MaxMemoryMB: ap.MaxMemoryMB}
	var step autopilotStep
	if direction == "up" {
		switch {
		case ap.MaxMemoryMB < b.MaxMB:
			next.MaxMemoryMB = min(b.MaxMB, ap.MaxMemoryMB*2)
			step = autopilotStep{stepGrowMemory, fmt.Sprintf("item memory per server %d → %d MiB, in place: %s for %s", ap.MaxMemoryMB, next.MaxMemoryMB, figures, b.ScaleUpAfter)}
		case ap.Replicas < b.MaxReplicas:
			next.Replicas++
			step = autopilotStep{stepAddServer, fmt.Sprintf("servers %d → %d (memory is at maxMemoryMB %d): %s for %s", ap.Replicas, next.Replicas, b.MaxMB, figures, b.ScaleUpAfter)}
		default:
			return nil, next, &limit{"AtMaximum", fmt.Sprintf("%s: the cache is at its bounds (maxReplicas %d, maxMemoryMB %d); raise them", figures, b.MaxReplicas, b.MaxMB), "bounds"}, nil
		}
	} else {
		stats := mc.Status.Stats
		switch {
		case ap.Replicas > b.MinReplicas:
			// The servers left must hold what all hold now, below the low-use share.
			if used, room := stats.MemoryUsed.Value(), int64(ap.Replicas-1)*int64(ap.MaxMemoryMB)<<20*int64(b.BelowPercent)/100; used >= room {
				return nil, next, &limit{"TooFullToRemove", fmt.Sprintf("%s: %s would hold the %s in use above %d%%", figures, texts.Count(ap.Replicas-1, "server", "servers"), stats.MemoryUsed.String(), b.BelowPercent), "bounds"}, nil
			}
			next.Replicas--
			step = autopilotStep{stepRemoveServer, fmt.Sprintf("servers %d → %d, the highest removed: %s for %s", ap.Replicas, next.Replicas, figures, b.ScaleInAfter)}
		case ap.MaxMemoryMB > b.FloorMB:
			next.MaxMemoryMB = max(b.FloorMB, ap.MaxMemoryMB/2)
			if int64(stats.MemoryUsedPercent)*int64(ap.MaxMemoryMB) >= int64(b.BelowPercent)*int64(next.MaxMemoryMB) {
				return nil, next, &limit{"TooFullToShrink", fmt.Sprintf("%s: at %d MiB the fullest server would use %d%% or more", figures, next.MaxMemoryMB, b.BelowPercent), "bounds"}, nil
			}
			held, err := r.heldMemory(ctx, mc)
			if errors.Is(err, servertalk.ErrTenantBusy) {
				return nil, next, nil, err
			}
			if err != nil {
				return nil, next, &limit{"MemoryHeld", fmt.Sprintf("%s: %v", figures, err), "memory_held"}, nil
			}
			if held > uint64(next.MaxMemoryMB)<<20 {
				return nil, next, &limit{"MemoryHeld", fmt.Sprintf("%s: a server holds %d MiB, above %d MiB, and memcached gives memory back only as its items expire or are deleted; a shrink in place waits for that", figures, held>>20, next.MaxMemoryMB), "memory_held"}, nil
			}
			step = autopilotStep{stepShrinkMemory, fmt.Sprintf("item memory per server %d → %d MiB, in place: %s for %s", ap.MaxMemoryMB, next.MaxMemoryMB, figures, b.ScaleInAfter)}
		default:
			return nil, next, nil, nil // at its least size: nothing to do, and nothing limits it
		}
	}
	if refusal, err := r.quotaRefusal(ctx, mc, ap, next); err != nil || refusal != "" {
		if err != nil {
			return nil, next, nil, err
		}
		return nil, next, &limit{"QuotaExceeded", fmt.Sprintf("%s: the step (%s) is not taken: %s", figures, step.kind, refusal), "quota"}, nil
	}
	return &step, next, nil, nil
}

// heldMemory is the most item memory any ready server of the Memcached has allocated.
func (r *Reconciler) heldMemory(ctx context.Context, mc *cachev1.Memcached) (uint64, error) {
	pods, err := serverset.Ready(ctx, r.Client, mc)
	if err != nil {
		return 0, err
	}
	// Asked beside the workers: until the answer comes (and brings this cache back), busy.
	answer, err, ok := r.talk.Ask(client.ObjectKeyFromObject(mc), "allocated of "+servertalk.PodUIDs(pods), func(ctx context.Context) (any, error) {
		var most uint64
		for _, a := range servertalk.Ask(ctx, pods, r.Reach, func(ctx context.Context, srv memcache.Server) (uint64, error) {
			return memcache.ReadAllocated(ctx, srv, servertalk.CacheTimeout)
		}) {
			if a.Err != nil {
				return uint64(0), fmt.Errorf("a server did not say how much memory it holds: %w", a.Err)
			}
			most = max(most, a.Value)
		}
		return most, nil
	})
	if !ok {
		return 0, servertalk.ErrTenantBusy
	}
	if err != nil {
		return 0, err
	}
	return answer.(uint64), nil
}

// notes are what is said, once the status is written, of a step and of a change of what limits
// the autopilot: Events and metrics; none when nothing is.
func (r *Reconciler) notes(mc *cachev1.Memcached, before, after cachev1.MemcachedStatus, step *autopilotStep) []func() {
	key := client.ObjectKeyFromObject(mc)
	var notes []func()
	if step != nil {
		reason := map[string]string{stepGrowMemory: "MemoryGrown", stepAddServer: "ServerAdded", stepRemoveServer: "ServerRemoved", stepShrinkMemory: "MemoryShrunk"}[step.kind]
		notes = append(notes, func() {
			r.Recorder.Eventf(mc, nil, corev1.EventTypeNormal, reason, "Autoscale", "%s", step.why)
			metrics.Autopilot.Step(key, step.kind)
		})
	}
	was, now := memcachedstatus.Condition(before, cachev1.ConditionScalingLimited), memcachedstatus.Condition(after, cachev1.ConditionScalingLimited)
	if now.Status == metav1.ConditionTrue && (was.Status != metav1.ConditionTrue || was.Reason != now.Reason) {
		why := map[string]string{"QuotaExceeded": "quota", "MemoryHeld": "memory_held"}[now.Reason]
		if why == "" {
			why = "bounds"
		}
		notes = append(notes, func() {
			r.Recorder.Eventf(mc, nil, corev1.EventTypeWarning, "ScalingLimited", "Autoscale", "%s", now.Message)
			metrics.Autopilot.Refused(key, why)
		})
	}
	if a := memcachedstatus.Condition(after, cachev1.ConditionScalingActive); a.Reason == "AutoscalingOff" && memcachedstatus.Condition(before, cachev1.ConditionScalingActive).Reason != "AutoscalingOff" {
		notes = append(notes, func() {
			r.Recorder.Eventf(mc, nil, corev1.EventTypeNormal, "AutoscalingOff", "Autoscale", "%s", a.Message)
		})
	}
	return notes
}

// SetupWithManager decides on every change of a Memcached's spec or status (its figures, its
// rollout) and of the ResourceQuotas of its namespace.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	inputs := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return true },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			// A Memcached with the autopilot off and nothing to undo has nothing to decide.
			a, b := e.ObjectOld.(*unstructured.Unstructured), e.ObjectNew.(*unstructured.Unstructured)
			on := func(u *unstructured.Unstructured) bool {
				enabled, _, _ := unstructured.NestedBool(u.Object, "spec", "autoscaling", "enabled")
				_, chose, _ := unstructured.NestedMap(u.Object, "status", "autopilot")
				return enabled || chose
			}
			return (on(a) || on(b)) && !onlyAutopilotWrote(a, b)
		},
	}
	quotaToMemcacheds := serverset.NamespaceMemcacheds(r.Client, func(m *unstructured.Unstructured) bool {
		enabled, _, _ := unstructured.NestedBool(m.Object, "spec", "autoscaling", "enabled")
		return enabled
	})
	if r.talk == nil {
		r.talk = servertalk.NewConversations()
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("memcached-autopilot").
		For(managercache.MemcachedObject(), builder.WithPredicates(inputs)).
		Watches(&corev1.ResourceQuota{}, quotaToMemcacheds).
		// The servers' answers, which come beside the workers.
		WatchesRawSource(source.Channel(r.talk.Done(), &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Complete(r)
}

// onlyAutopilotWrote tells an update that changed nothing but what the autopilot itself writes
// (status.autopilot, its two conditions): deciding again on its own write would only repeat it.
func onlyAutopilotWrote(before, after *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		c := u.DeepCopy().Object
		unstructured.RemoveNestedField(c, "metadata", "resourceVersion")
		unstructured.RemoveNestedField(c, "metadata", "managedFields")
		unstructured.RemoveNestedField(c, "status", "autopilot")
		conds, _, _ := unstructured.NestedSlice(c, "status", "conditions")
		var others []any
		for _, x := range conds {
			if m, ok := x.(map[string]any); ok && (m["type"] == cachev1.ConditionScalingActive || m["type"] == cachev1.ConditionScalingLimited) {
				continue
			}
			others = append(others, x)
		}
		if others != nil {
			_ = unstructured.SetNestedSlice(c, others, "status", "conditions")
		} else {
			unstructured.RemoveNestedField(c, "status", "conditions")
		}
		return c
	}
	return reflect.DeepEqual(strip(before), strip(after))
}
