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
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/managercache"
	"github.com/example/memcached-operator/controllers/internal/memcachedstatus"
	"github.com/example/memcached-operator/controllers/internal/progress"
	"github.com/example/memcached-operator/controllers/internal/serverset"
	"github.com/example/memcached-operator/controllers/internal/servertalk"
	"github.com/example/memcached-operator/internal/helm"
	"github.com/example/memcached-operator/internal/helm/library"
	"github.com/example/memcached-operator/internal/labels"
	"github.com/example/memcached-operator/internal/rollout"
)

// Reconciler is the Go side of the Helm-driven Memcached API:
//   - it moves spec fields that a chart release renamed to their new names (0.2.0:
//     spec.memcached.memoryLimitMB -> maxMemoryMB), so CRs written for an older release converge
//     to the current schema; the chart still reads the old name until then;
//   - it retires the pods of an earlier release that an upgrade replacing the Deployment left
//     running (see internal/helm): they serve until the StatefulSet's servers are all
//     available, then leave the Services, and stop RetireDelay later, so no client request fails;
//   - it drives every change of the servers (rollout.go): the one plan per cache in
//     status.rollout, made before Helm's upgrades (BeforeUpgrade) and taken one server at a time;
//   - it reports the memcached pods in status: the version they run, replica counts, the servers
//     clients shard keys over, and the conditions Available, Progressing, Resizing and CacheWarm,
//     from the release's StatefulSet, its pods and status.rollout. It is their only writer.
type Reconciler struct {
	client.Client
	// Live reads what a change of the servers goes on from (the Memcached, its StatefulSet, a
	// server's pod) from the API server, and writes pods.
	Live     client.Client
	Recorder events.EventRecorder
	// Support says whether the cluster resizes pods in place.
	Support *ResizeSupport
	// Reach is how the operator reaches the servers.
	Reach *servertalk.Reach
	// talk has the conversations with the servers held off the workers.
	talk *servertalk.Conversations
	// limitsKept holds, per Memcached, the servers (by UID and restarts) whose memcached was last
	// given the limit they were resized to in place (keepLimits): asked again when one restarts.
	limitsKept sync.Map // types.NamespacedName → keptLimit
	// RetireDelay: see DefaultRetireDelay.
	RetireDelay time.Duration
	// Records are the Helm side's decoded release records, whose seals say which records count
	// (helm.Options.Records).
	Records *helm.Records
	// replaced holds, per Memcached, the resourceVersion its last status write replaced: while
	// the cache still shows that version, a write would be refused (a conflict) and what it
	// would say is already written. Another reconcile (a resync, an event of a StatefulSet or a
	// record) can come a moment after a write, before the cache shows it.
	replaced sync.Map // types.NamespacedName → string
	// ProgressDelay: see DefaultProgressDelay.
	ProgressDelay time.Duration
	// progressSince holds, per Memcached, since when a report that says only how far its
	// rollout has come waits to be written (progressOnly).
	progressSince sync.Map // types.NamespacedName → time.Time
}

// DefaultProgressDelay is how long a report that changes only how far a rollout has come (the
// replica counts and the messages of Available and Progressing: progressOnly) waits before it is
// written, taking in what changes meanwhile: a StatefulSet's controller reports pods in steps,
// often milliseconds apart, each of which would be a status write of every CR (the API server's CPU
// and each CR's watchers'). Its first step for a new StatefulSet, the generation seen before any
// pod, changes no report at all (rollout.String). What changes a condition's
// status or reason, the servers or the version is written at once, with the progress there is.
const DefaultProgressDelay = time.Second

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch;delete

// Reconcile migrates the spec if needed, retires old pods, then writes the status only when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	mc := &cachev1.Memcached{}
	if err := r.Get(ctx, req.NamespacedName, mc); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if mc.DeletionTimestamp != nil {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if rv, ok := r.replaced.Load(req.NamespacedName); ok && rv == mc.ResourceVersion {
		return ctrl.Result{RequeueAfter: memcachedstatus.ConflictRetry}, nil // the cache does not show our last write yet
	}

	if migrated, err := r.migrateSpec(ctx, mc); err != nil || migrated {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: memcachedstatus.ConflictRetry}, nil // the CR changed meanwhile: look again
		}
		return ctrl.Result{}, err // a migration changes the generation, which reconciles again
	}

	if err := r.moveFinalizer(ctx, mc); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: memcachedstatus.ConflictRetry}, nil
		}
		return ctrl.Result{}, err
	}

	servers, err := serverset.Of(ctx, r.Client, mc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if servers == nil && !helm.HasUninstallFinalizer(mc) {
		// A new CR: the Helm side first adds its finalizer with an update that a status write
		// now would make conflict. The StatefulSet it installs brings us back.
		return ctrl.Result{}, nil
	}
	revision, err := helm.DeployedRevision(ctx, r.Client, r.Records, mc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if memcachedstatus.Condition(mc.Status, cachev1.ConditionAvailable).Type == "" {
		// The first install is in flight, however long it waited for a Helm worker. Its report
		// goes with the Helm side's status write that says it is deployed (FirstReport), or,
		// when that one could not carry it, right after it (helmOutcomeChanged brings us back,
		// the StatefulSet's and the record's events once the cache shows them): not a write per
		// object Helm creates, nor a race with the Helm side's write. An install that fails is
		// reported as soon as the Helm side says so.
		switch helmOutcome(mc.Status) {
		case "":
			return ctrl.Result{}, nil
		case library.ConditionDeployed:
			if servers == nil || revision == 0 {
				return ctrl.Result{}, nil
			}
		}
	}
	pods, err := r.podsOf(ctx, mc)
	if err != nil {
		return ctrl.Result{}, err
	}
	retiring, requeue, err := r.retireOldPods(ctx, mc, servers, pods)
	if err != nil {
		return ctrl.Result{}, err
	}
	if again, err := r.replaceForVolumes(ctx, mc, servers, pods); err != nil {
		return ctrl.Result{}, err
	} else if again > 0 && (requeue == 0 || again < requeue) {
		requeue = again
	}
	if servers != nil && changing(mc, servers) {
		// A change of the servers goes on from the Memcached and StatefulSet as they are live,
		// not as the cache shows them: what the last step recorded must be seen.
		if mc, servers, err = r.readLive(ctx, mc, servers); err != nil || mc == nil {
			return ctrl.Result{}, err
		}
	}
	rs, again, announce, err := r.advance(ctx, mc, servers, revision, pods)
	if err != nil {
		return memcachedstatus.AfterWriteError(err)
	}
	if rs != nil && rs.Change == nil && len(rs.Servers) == 0 {
		rs = nil // nothing to say: no write for it
	}
	if again > 0 && (requeue == 0 || again < requeue) {
		requeue = again
	}
	st := operandStatus(mc, servers, revision, retiring, pods, rs)
	if c := memcachedstatus.Condition(*st, cachev1.ConditionProgressing); c.Reason == cachev1.ReasonPodsFailing && memcachedstatus.Condition(mc.Status, cachev1.ConditionProgressing).Reason != cachev1.ReasonPodsFailing {
		r.Recorder.Eventf(mc, nil, corev1.EventTypeWarning, cachev1.ReasonPodsFailing, "ObserveOperand", "%s", c.Message)
	}
	if equality.Semantic.DeepEqual(*st, mc.Status) {
		r.progressSince.Delete(req.NamespacedName)
		announce()
		return ctrl.Result{RequeueAfter: requeue}, nil
	}
	if wait := r.progressWait(req.NamespacedName, mc.Status, *st); wait > 0 {
		if requeue > 0 && requeue < wait {
			wait = requeue
		}
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	// On the version read: BeforeUpgrade records a change there too, and neither may overwrite
	// what the other wrote meanwhile.
	before := mc.ResourceVersion
	written, err := memcachedstatus.OperandWriter.WriteOn(ctx, r.Client, mc, st, before)
	if err != nil {
		if written != "" {
			announce() // what st says is live: only the trim after it failed
		}
		return memcachedstatus.AfterWriteError(err)
	}
	mc.Status = *st
	if written != before { // (a write that changed nothing made no new version to wait for)
		r.replaced.Store(req.NamespacedName, before)
	}
	announce()
	r.progressSince.Delete(req.NamespacedName)
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// changing says whether a change of mc's servers is in flight, or left for this operator to take
// on or finish: status.rollout's, a hold not let go, or the record of an earlier operator.
func changing(mc *cachev1.Memcached, servers *appsv1.StatefulSet) bool {
	_, held := servers.Annotations[labels.ResizeHold]
	_, empty := servers.Annotations[labels.StartedEmpty]
	return (mc.Status.Rollout != nil && rollout.InFlight(mc.Status.Rollout.Change)) || serverset.PartitionOf(servers) > 0 || held || empty
}

// readLive reads mc and its StatefulSet from the API server; nil when either is gone or another.
func (r *Reconciler) readLive(ctx context.Context, mc *cachev1.Memcached, servers *appsv1.StatefulSet) (*cachev1.Memcached, *appsv1.StatefulSet, error) {
	// The StatefulSet first: a change is recorded in the Memcached's status before its hold, so a
	// hold read here has its change in the status read next.
	liveMC, liveServers := &cachev1.Memcached{}, &appsv1.StatefulSet{}
	if err := r.Live.Get(ctx, client.ObjectKeyFromObject(servers), liveServers); err != nil || liveServers.UID != servers.UID {
		return nil, nil, client.IgnoreNotFound(err)
	}
	if err := r.Live.Get(ctx, client.ObjectKeyFromObject(mc), liveMC); err != nil || liveMC.UID != mc.UID {
		return nil, nil, client.IgnoreNotFound(err)
	}
	return liveMC, liveServers, nil
}

// forget drops what the reconciler holds of a Memcached that is gone or going.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.replaced.Delete(key)
	r.progressSince.Delete(key)
	r.limitsKept.Delete(key)
	if r.talk != nil {
		r.talk.Forget(key)
	}
}

// progressWait is how much longer the report st of the Memcached key, whose status is now live,
// waits before it is written: 0 when it says more than how far the rollout has come
// (progressOnly) or has waited ProgressDelay since the first such report.
func (r *Reconciler) progressWait(key types.NamespacedName, live, st cachev1.MemcachedStatus) time.Duration {
	if !progressOnly(live, st) {
		return 0
	}
	delay := r.ProgressDelay
	if delay <= 0 {
		delay = DefaultProgressDelay
	}
	now := time.Now()
	since, _ := r.progressSince.LoadOrStore(key, now)
	return delay - now.Sub(since.(time.Time))
}

// progressOnly says whether st differs from live only in how far a rollout has come: the
// replica counts, and the messages of Available and Progressing whose status and reason stay
// (not of a failing pod: its message says why, and a new why is written at once).
func progressOnly(live, st cachev1.MemcachedStatus) bool {
	st = *st.DeepCopy()
	st.Replicas, st.UpdatedReplicas, st.ReadyReplicas = live.Replicas, live.UpdatedReplicas, live.ReadyReplicas
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != cachev1.ConditionAvailable && c.Type != cachev1.ConditionProgressing {
			continue
		}
		if was := memcachedstatus.Condition(live, c.Type); was.Status == c.Status && was.Reason == c.Reason && c.Reason != cachev1.ReasonPodsFailing {
			c.Message = was.Message
		}
	}
	return equality.Semantic.DeepEqual(st, live)
}

// FirstReport is the Go side's first report, carried by the Helm side's status write that says the
// first install succeeded (helm.Options.FirstReport): one write for both sides. It is what Reconcile
// would write next; nil when Reconcile has more to do: the cache does not show the install's
// StatefulSet and deployed record within firstReportWait, pods of an earlier release are up, or a
// pod is failing (Reconcile's Event goes with that report).
func (r *Reconciler) FirstReport(ctx context.Context, cr *unstructured.Unstructured) (map[string]any, error) {
	mc := &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: cr.GetNamespace(), Name: cr.GetName(), UID: cr.GetUID()}}
	var err error
	if mc.Status, err = managercache.StatusOf(cr); err != nil {
		return nil, fmt.Errorf("read the status of Memcached %s/%s: %w", mc.Namespace, mc.Name, err)
	}
	var servers *appsv1.StatefulSet
	var revision int32
	waitCtx, cancel := context.WithTimeout(ctx, firstReportWait)
	defer cancel()
	err = firstReportPoll.DelayFunc().Until(waitCtx, true, false, func(ctx context.Context) (bool, error) {
		var err error
		if servers, err = serverset.Of(ctx, r.Client, mc); err != nil || servers == nil {
			return false, err
		}
		revision, err = helm.DeployedRevision(ctx, r.Client, r.Records, mc)
		return revision > 0, err
	})
	if wait.Interrupted(err) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	pods, err := r.podsOf(ctx, mc)
	if err != nil || len(earlierReleasePods(pods)) > 0 || progress.PodTrouble(pods) != "" {
		return nil, err
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(operandStatus(mc, servers, revision, 0, pods, mc.Status.Rollout))
}

// FirstReport waits up to firstReportWait for the cache to show what the install made a moment
// ago (watch events come milliseconds after the writes), with a Helm worker waiting: it asks after
// 1, 2, 4, 8 ms, then every 10 ms (a DelayFunc keeps its cap; a Backoff would stop there).
const firstReportWait = 500 * time.Millisecond

var firstReportPoll = wait.Backoff{Duration: time.Millisecond, Factor: 2, Cap: 10 * time.Millisecond, Steps: 4}

// podsOf lists the pods that carry the release's labels.
func (r *Reconciler) podsOf(ctx context.Context, mc *cachev1.Memcached) ([]corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(mc.Namespace), client.MatchingFields{serverset.InstanceIndex: mc.Name},
		client.MatchingLabels{labels.Name: labels.ChartName, labels.Instance: mc.Name}); err != nil {
		return nil, fmt.Errorf("list pods of Memcached %s/%s: %w", mc.Namespace, mc.Name, err)
	}
	return pods.Items, nil
}

// helmOutcomeChanged passes updates of a Memcached whose Helm outcome changed (helmOutcome).
var helmOutcomeChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		outcome := func(o client.Object) string {
			if st, err := managercache.StatusOf(o); err == nil {
				return helmOutcome(st)
			}
			return ""
		}
		return outcome(e.ObjectOld) != outcome(e.ObjectNew)
	},
}

// SetupWithManager reconciles on spec changes of a Memcached and on any change of its
// StatefulSet, its release records, or its pods' readiness and trouble.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	recordToMemcached := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
		return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetLabels()[library.RecordNameLabel]}}}
	})
	if r.talk == nil {
		r.talk = servertalk.NewConversations()
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("memcached-operand").
		// A conversation with a cache's servers ended: its answer waits for this cache's reconcile.
		WatchesRawSource(source.Channel(r.talk.Done(), &handler.EnqueueRequestForObject{})).
		// The spec, and the Helm side's outcome, which the first report waits for.
		For(managercache.MemcachedObject(), builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, helmOutcomeChanged))).
		Watches(&appsv1.StatefulSet{}, serverset.ToMemcached(), builder.WithPredicates(serverset.ChartObjects)).
		// A pod that cannot start changes no StatefulSet status; a server that turns ready or
		// not changes the ready servers; a change of the servers takes its next step when the
		// kubelet reports a resize or a restart of memcached, and a pod deleted is replaced.
		Watches(&corev1.Pod{}, serverset.ToMemcached(), builder.WithPredicates(serverset.ChartObjects, predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false },
			UpdateFunc: func(e event.UpdateEvent) bool {
				return serverChanged(e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod))
			},
			DeleteFunc:  func(event.DeleteEvent) bool { return true },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Watches(&corev1.Secret{}, recordToMemcached). // the cache holds only release records
		// A step a ResourceQuota blocked is tried again when a quota of the namespace changes.
		Watches(&corev1.ResourceQuota{}, serverset.NamespaceMemcacheds(r.Client, blockedChange)).
		Complete(r)
}

// serverChanged says whether a server's pod changed in what its status or a change of the servers
// reads: its trouble, readiness, template revision, memcached's restarts, the kubelet's report of
// a resize, its spec (a resize, an image changed in place), its stop asked (persistence), its
// controller (a StatefulSet made again adopts it).
func serverChanged(before, after *corev1.Pod) bool {
	return progress.PodTrouble([]corev1.Pod{*before}) != progress.PodTrouble([]corev1.Pod{*after}) || serverset.PodReady(before) != serverset.PodReady(after) ||
		(before.DeletionTimestamp == nil) != (after.DeletionTimestamp == nil) || serverset.ControllerUID(before) != serverset.ControllerUID(after) ||
		before.Labels[appsv1.StatefulSetRevisionLabel] != after.Labels[appsv1.StatefulSetRevisionLabel] ||
		rollout.RestartsOf(before, labels.ChartName) != rollout.RestartsOf(after, labels.ChartName) ||
		before.Generation != after.Generation || before.Status.ObservedGeneration != after.Status.ObservedGeneration ||
		!equality.Semantic.DeepEqual(resizeStatus(before), resizeStatus(after))
}

// blockedChange passes the Memcacheds whose change of the servers a policy of the namespace
// blocks.
func blockedChange(u *unstructured.Unstructured) bool {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "rollout", "change", "phase")
	return phase == cachev1.RolloutBlocked
}
