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
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/helm"
	"github.com/example/memcached-operator/internal/labels"
)

// Memory changes in place. A change of a Memcached that changes only its servers' memory (the
// memcached container's resources and memcached's -m) would otherwise roll every server, and each
// restarted memcached starts empty. Kubernetes resizes a running pod's resources in place (the
// pods/resize subresource, 1.33 and later) and memcached changes its limit at runtime
// (`cache_memlimit`), so the operator makes such a change without a restart:
//
//  1. before Helm applies the upgrade (BeforeUpgrade), it holds the StatefulSet's rollout
//     (spec.updateStrategy.rollingUpdate.partition) and records why in the ResizeHold annotation;
//  2. for each server (Reconcile), growing: it resizes the pod, waits for the kubelet, then raises
//     memcached's limit; shrinking: memcached first, then the pod; then it labels the pod with the
//     StatefulSet's new revision, which the pod now matches;
//  3. with every server done, it lets go of the rollout, which has nothing left to replace.
//
// Where that cannot be done, the StatefulSet rolls the servers one at a time as for any other
// change, and the annotation, the Resizing condition and an Event say why: the API server does not
// serve pods/resize (a cluster before 1.33, or the feature gate off), the change moves the pods to
// another QoS class, a server holds more memory than the new limit (memcached keeps what it has
// allocated until its items expire or are deleted), or the kubelet refuses or does not finish.
// What is decided and done is in the StatefulSet and its pods, so an operator restart resumes.

const (
	// holdWait is how long a hold waits for the upgrade it was made for: Helm applies it right
	// after the hold, so one still not applied failed.
	holdWait = time.Minute
	// resizeTimeout bounds an in-place resize: a kubelet that has not resized every server by
	// then (no room on the node, an error) gets the rollout instead.
	resizeTimeout = 3 * time.Minute
	// resizePoll is how soon a resize that waits for a kubelet looks again (pod events bring it
	// back sooner).
	resizePoll = 2 * time.Second
	// blockedRetry is how often a resize the namespace's policy refuses is tried again (a change
	// of the spec brings it back sooner).
	blockedRetry = time.Minute
)

// MemcachedResizeReconciler changes the memory of a Memcached's servers in place (see above): it
// makes the hold before Helm's upgrade (BeforeUpgrade), resizes each server (Reconcile) and lets
// go of the hold. It also keeps memcached's limit on a server resized in place whose memcached
// restarted: the pod's arguments still say the old -m.
type MemcachedResizeReconciler struct {
	client.Client
	// Live reads what Helm is about to change, and pods' specs, from the API server.
	Live     client.Client
	Recorder events.EventRecorder
	// Records are the release records the Helm side decoded: the memory a release asks for is
	// read from its sealed record, not from objects a tenant may edit.
	Records *helm.Records
	Support *resizeSupport
	// Reach is how the operator reaches the servers.
	Reach *ServerReach
	// slots keep one namespace's caches from taking more than one worker at a time.
	slots tenantSlots
}

// +kubebuilder:rbac:groups="",resources=pods/resize,verbs=patch

// serverPods are the StatefulSet's pods, by ordinal.
func (r *MemcachedResizeReconciler) serverPods(ctx context.Context, s *appsv1.StatefulSet) (map[int32]*corev1.Pod, error) {
	list := &corev1.PodList{}
	opts := []client.ListOption{client.InNamespace(s.Namespace), client.MatchingLabels(s.Spec.Selector.MatchLabels)}
	if name := releaseOf(s.Spec.Selector.MatchLabels); name != "" {
		opts = append(opts, client.MatchingFields{instanceIndex: name}) // not a scan of the namespace
	}
	if err := r.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("list the servers of StatefulSet %s: %w", s.Name, err)
	}
	pods := map[int32]*corev1.Pod{}
	for i := range list.Items {
		p := &list.Items[i]
		ref := metav1.GetControllerOf(p)
		if ref == nil || ref.UID != s.UID || p.DeletionTimestamp != nil || p.Spec.HostNetwork {
			continue // a pod on the host network has its node's address: never the chart's
		}
		n, err := strconv.ParseInt(strings.TrimPrefix(p.Name, s.Name+"-"), 10, 32)
		if err != nil || !strings.HasPrefix(p.Name, s.Name+"-") {
			continue
		}
		pods[int32(n)] = p
	}
	return pods, nil
}

// Reconcile carries a Memcached's in-place resize on by one step per server, and keeps memcached's
// limit on servers resized in place.
func (r *MemcachedResizeReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	mc := &cachev1.Memcached{}
	if err := r.Get(ctx, req.NamespacedName, mc); err != nil || mc.DeletionTimestamp != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	servers, err := serversOf(ctx, r.Client, mc)
	if err != nil || servers == nil {
		return ctrl.Result{}, err
	}
	rec := resizeRecordOf(servers)
	if rec == nil {
		// No change was ever made in place; a server left out of the Service (a record the
		// tenant removed mid-restart) serves again.
		return ctrl.Result{}, r.keepServing(ctx, servers)
	}
	// What follows may talk to the servers: one of a namespace's caches at a time.
	release, ok := r.slots.take(req.NamespacedName)
	if !ok {
		return ctrl.Result{RequeueAfter: tenantRetry}, nil
	}
	defer release()
	if rec.Outcome != outcomeResizing {
		return ctrl.Result{}, errors.Join(r.keepServing(ctx, servers), r.keepLimits(ctx, servers))
	}
	// A change in flight goes on from the StatefulSet as it is, not as the cache shows it: the
	// record of a restart begun a moment ago must be seen before the pod's next event is taken
	// for its end.
	live := &appsv1.StatefulSet{}
	if err := r.Live.Get(ctx, client.ObjectKeyFromObject(servers), live); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if live.UID != servers.UID {
		return ctrl.Result{}, nil // replaced meanwhile: its own events bring us back
	}
	servers = live
	if rec = resizeRecordOf(servers); rec == nil || rec.Outcome != outcomeResizing {
		return ctrl.Result{}, nil
	}
	if partitionOf(servers) == 0 {
		return ctrl.Result{}, r.letGo(ctx, mc, servers, *rec, "the rollout was no longer held (someone set its partition to 0)")
	}
	// The annotation is the tenant's to edit: a time to come counts as long past (a hold that
	// could never time out would be polled forever). Servers restarted one at a time each have
	// resizeTimeout from the last one done.
	elapsed, stalled := age(rec.Since), age(rec.Since)
	if rec.Progress != nil {
		stalled = age(*rec.Progress)
	}
	if stalled > resizeTimeout && rec.Blocked == "" {
		return ctrl.Result{}, r.letGo(ctx, mc, servers, *rec, fmt.Sprintf("the servers were not all changed in place within %s", resizeTimeout))
	}
	deployed, err := helm.DeployedRevision(ctx, r.Client, r.Records, mc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if deployed <= rec.Release {
		// The upgrade the hold is for has not been applied: Helm applies it right after the
		// hold, so one not applied by now failed, and nothing changed. Until then, look again
		// soon: the new release record, which says it was applied, is not watched here.
		if wait := holdWait - elapsed; wait > 0 {
			return ctrl.Result{RequeueAfter: min(wait, resizePoll)}, nil
		}
		return ctrl.Result{}, r.abandon(ctx, servers, "the upgrade the servers were held for was not applied")
	}
	fromRel, err := helm.Release(ctx, r.Client, r.Records, mc, rec.Release)
	if err != nil {
		return ctrl.Result{}, err
	}
	toRel, err := helm.Release(ctx, r.Client, r.Records, mc, deployed)
	if err != nil {
		return ctrl.Result{}, err
	}
	from, to := statefulSetOf(manifestOf(fromRel)), statefulSetOf(manifestOf(toRel))
	if from == nil || to == nil {
		return ctrl.Result{RequeueAfter: resizePoll}, nil // a record not decoded yet (its event brings us back), or none: the timeout bounds it
	}
	plan := planTemplateChange(&from.Spec.Template, &to.Spec.Template)
	if plan.way == WayStartedEmpty {
		return ctrl.Result{}, r.letGo(ctx, mc, servers, *rec, fmt.Sprintf("a change came while the servers were changed in place, and %s", plan.why))
	}
	if plan.way != "" && rec.Way != "" && (plan.way != rec.Way || plan.change() != rec.Change) {
		// A later change joined this one (BeforeUpgrade): the record says what is made now.
		rec.Way, rec.Change, rec.Memory = plan.way, plan.change(), plan.memory
		rec.ToMB, rec.ToLimit = plan.after.MB, plan.after.limit()
		return ctrl.Result{}, r.record(ctx, servers, *rec)
	}
	pods, err := r.serverPods(ctx, servers)
	if err != nil {
		return ctrl.Result{}, err
	}
	restarting := ""
	if rec.Restart != nil {
		restarting = rec.Restart.Server
	}
	if err := r.restoreServing(ctx, pods, restarting); err != nil {
		return ctrl.Result{}, err
	}
	held := min(partitionOf(servers), replicasOf(servers))
	if plan.memory && plan.after.MB < plan.before.MB && !warmTemplate(&to.Spec.Template) && !rec.Fits {
		// A shrink in place needs every server to hold no more than the new limit: asked here,
		// on the resize's own workers, not on Helm's before the upgrade.
		var ask []*corev1.Pod
		for n := range held {
			if p := pods[n]; p != nil && p.Labels[appsv1.StatefulSetRevisionLabel] == rec.Revision {
				ask = append(ask, p)
			}
		}
		if why := r.shrinkRefusal(ctx, ask, plan.after); why != "" {
			return ctrl.Result{}, r.letGo(ctx, mc, servers, *rec, why)
		}
		rec.Fits = true
		return ctrl.Result{}, r.record(ctx, servers, *rec) // its event brings us back
	}
	// The StatefulSet must show the release's template, and its controller must have seen it:
	// its update revision is then that template.
	if !showsTemplate(&servers.Spec.Template, &to.Spec.Template) || servers.Status.ObservedGeneration < servers.Generation || servers.Status.UpdateRevision == "" {
		return ctrl.Result{RequeueAfter: resizePoll}, nil
	}
	// Every conversation with the servers in this reconcile shares one deadline: a server that
	// answers slowly holds the worker for cacheTimeout in all, however many servers it takes.
	talk, cancel := context.WithTimeout(ctx, cacheTimeout)
	defer cancel()
	change := serverChange{plan: plan, from: &from.Spec.Template, to: &to.Spec.Template, update: servers.Status.UpdateRevision, talk: talk}
	waiting, blocked := false, ""
	// The held servers that still are (a smaller replicaCount removes the highest), the highest
	// first, as the StatefulSet rolls them: one at a time where memcached restarts, so that only
	// one server's share of the keys is away at any moment.
	for n := held - 1; n >= 0; n-- {
		p := pods[n]
		if p == nil {
			waiting = true // the StatefulSet controller recreates it (at the revision it held)
			if plan.restartsMemcached() {
				break // its keys are away already: no other server restarts meanwhile
			}
			continue
		}
		switch p.Labels[appsv1.StatefulSetRevisionLabel] {
		case change.update:
			continue
		case rec.Revision:
		default:
			return ctrl.Result{}, r.letGo(ctx, mc, servers, *rec, fmt.Sprintf("server %s runs template revision %s, not the one the hold was made for", p.Name, p.Labels[appsv1.StatefulSetRevisionLabel]))
		}
		step, err := r.updateServer(ctx, mc, servers, rec, p, change)
		if err != nil {
			return ctrl.Result{}, err
		}
		switch {
		case step.refusal != "":
			return ctrl.Result{}, r.letGo(ctx, mc, servers, *rec, step.refusal)
		case step.blocked != "":
			blocked = step.blocked
		}
		waiting = waiting || !step.done
		if !step.done && plan.restartsMemcached() {
			break // the next server restarts once this one serves again
		}
	}
	if blocked != rec.Blocked {
		// Refused by a policy of the namespace (a ResourceQuota, a LimitRange): a rollout would
		// be refused its new pods alike, and leave servers missing. The servers stay as they are,
		// held, until the policy or the spec changes; the resize is tried again meanwhile.
		rec.Blocked = blocked
		if err := r.record(ctx, servers, *rec); err != nil {
			return ctrl.Result{}, err
		}
		if blocked != "" {
			r.Recorder.Eventf(mc, servers, corev1.EventTypeWarning, ReasonResizeBlocked, "ResizeServers",
				"%s waits, the servers kept as they are: %s", rec.what(), blocked)
		}
		return ctrl.Result{RequeueAfter: blockedRetry}, nil
	}
	if blocked != "" {
		return ctrl.Result{RequeueAfter: blockedRetry}, nil
	}
	if waiting {
		return ctrl.Result{RequeueAfter: resizePoll}, nil
	}
	n := min(partitionOf(servers), replicasOf(servers))
	rec.Outcome, rec.At, rec.ToMB, rec.ToLimit = outcomeInPlace, ptr.To(metav1.Now()), plan.after.MB, plan.after.limit()
	if err := r.release(ctx, servers, *rec); err != nil {
		return ctrl.Result{}, err
	}
	switch {
	case rec.Way == WayWarmRestart:
		r.Recorder.Eventf(mc, servers, corev1.EventTypeNormal, WayWarmRestart, "ChangeServers",
			"%s: %s restarted one at a time in their pods, %d with their items", rec.what(), count(n, "server", "servers"), len(rec.Warm))
	case rec.memoryChange():
		r.Recorder.Eventf(mc, servers, corev1.EventTypeNormal, ReasonResizedInPlace, "ResizeServers",
			"%s: %s resized in place, none restarted", rec.what(), count(n, "server", "servers"))
		resizeMetrics.WithLabelValues("in_place").Inc()
	default:
		r.Recorder.Eventf(mc, servers, corev1.EventTypeNormal, WayInPlace, "ChangeServers",
			"%s: written onto %s in place, none restarted", rec.what(), count(n, "server", "servers"))
	}
	changeMetrics.WithLabelValues(wayMetric(cmp.Or(rec.Way, WayInPlace))).Inc()
	return ctrl.Result{}, nil
}

// age is how long ago t was; a time to come (written by someone else) counts as a day ago.
func age(t metav1.Time) time.Duration {
	if d := time.Since(t.Time); d >= 0 {
		return d
	}
	return 24 * time.Hour
}

// serverChange is what each held server is taken to: the plan, the templates it is between, and
// the StatefulSet's revision of the template after.
type serverChange struct {
	plan     templatePlan
	from, to *corev1.PodTemplateSpec
	update   string
	// talk bounds the reconcile's conversations with the servers.
	talk context.Context
}

// showsTemplate says whether the StatefulSet's template live is the release's template want in
// what a change in place changes (the API server fills in defaults the manifest leaves out).
func showsTemplate(live, want *corev1.PodTemplateSpec) bool {
	l, ok1 := memoryOf(&live.Spec)
	w, ok2 := memoryOf(&want.Spec)
	if !ok1 || !ok2 || l.MB != w.MB || !equality.Semantic.DeepEqual(l.Resources, w.Resources) {
		return false
	}
	for _, c := range want.Spec.Containers {
		if have := containerNamed(&live.Spec, c.Name); have == nil || have.Image != c.Image {
			return false
		}
	}
	// Helm's three-way merge keeps what others added (kubectl rollout restart's annotation):
	// the release's own must be there.
	return holds(live.Labels, want.Labels) && holds(live.Annotations, want.Annotations)
}

// holds says whether every entry of want is in have.
func holds(have, want map[string]string) bool {
	for k, v := range want {
		if w, ok := have[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// SetupWithManager resizes when a Memcached's StatefulSet changes (its hold, its template, its
// controller's revisions) or one of its servers does (readiness, the kubelet's resize status, its
// revision label).
func (r *MemcachedResizeReconciler) SetupWithManager(mgr ctrl.Manager) error {
	serverChanged := predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			a, b := e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod)
			return podReady(a) != podReady(b) || a.Generation != b.Generation ||
				a.Labels[appsv1.StatefulSetRevisionLabel] != b.Labels[appsv1.StatefulSetRevisionLabel] ||
				a.Status.ObservedGeneration != b.Status.ObservedGeneration ||
				!equality.Semantic.DeepEqual(resizeStatus(a), resizeStatus(b))
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("memcached-resize").
		For(MemcachedObject(), builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(event.CreateEvent) bool { return true },
			UpdateFunc:  func(event.UpdateEvent) bool { return false },
			DeleteFunc:  func(event.DeleteEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		// Only a StatefulSet whose memory changed since the operator made it has anything to do.
		Watches(&appsv1.StatefulSet{}, toMemcached(), builder.WithPredicates(chartObjects, predicate.NewPredicateFuncs(func(o client.Object) bool {
			_, ok := o.GetAnnotations()[labels.ResizeHold]
			return ok
		}))).
		Watches(&corev1.Pod{}, toMemcached(), builder.WithPredicates(chartObjects, serverChanged)).
		// A resize a ResourceQuota blocked is tried again when a quota changes.
		Watches(&corev1.ResourceQuota{}, namespaceMemcacheds(r.Client, func(*unstructured.Unstructured) bool { return true })).
		// Two workers, of which a namespace takes one at most (slots); a failed conversation with a
		// server is tried again after 1 s, doubling up to 5 minutes, not at once.
		WithOptions(controller.Options{MaxConcurrentReconciles: 2,
			RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, 5*time.Minute)}).
		Complete(r)
}
