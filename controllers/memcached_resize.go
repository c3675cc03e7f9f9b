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
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/helm"
	"github.com/example/memcached-operator/internal/labels"
	"github.com/example/memcached-operator/internal/operand"
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

// Reasons of the Resizing condition.
const (
	ConditionResizing = "Resizing"
	// ReasonResizingInPlace: the servers are being resized in place (True); ReasonResizedInPlace:
	// the last memory change was made in place (False).
	ReasonResizingInPlace = "ResizingInPlace"
	ReasonResizedInPlace  = "ResizedInPlace"
	// ReasonRollingOut: a memory change rolls the servers out (True); ReasonRolledOut: the last
	// one was rolled out (False). The message says why not in place.
	ReasonRollingOut = "RollingOut"
	ReasonRolledOut  = "RolledOut"
	// ReasonResizeBlocked: the API server refuses to resize a server for a policy of the
	// namespace; the servers stay as they are, held (True).
	ReasonResizeBlocked = "ResizeBlocked"
)

// Outcomes of a memory change in the ResizeHold annotation.
const (
	outcomeResizing  = ""
	outcomeInPlace   = "InPlace"
	outcomeRolledOut = "RolledOut"
)

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

// resizeRecord is the ResizeHold annotation: what the operator decided for the memory change that
// an upgrade of the release makes, and how it went.
type resizeRecord struct {
	// Release is the release revision the servers ran when the change came: the upgrade makes
	// a later one.
	Release int32 `json:"release"`
	// Revision is the StatefulSet's template revision the servers ran then.
	Revision string `json:"revision,omitempty"`
	// FromMB and ToMB are memcached's item memory before and after, in MiB; FromLimit and
	// ToLimit the container's memory limit.
	FromMB    int32  `json:"fromMB"`
	ToMB      int32  `json:"toMB"`
	FromLimit string `json:"fromLimit,omitempty"`
	ToLimit   string `json:"toLimit,omitempty"`
	// Since is when the change came.
	Since metav1.Time `json:"since"`
	// Outcome is "" while the servers are resized in place, InPlace once they are, RolledOut
	// when the StatefulSet rolls them instead, for the reason in Why.
	Outcome string       `json:"outcome,omitempty"`
	Why     string       `json:"why,omitempty"`
	At      *metav1.Time `json:"at,omitempty"`
	// Blocked says why the resize waits while the servers stay held: the API server refused a
	// resize for a policy of the namespace (a ResourceQuota, a LimitRange).
	Blocked string `json:"blocked,omitempty"`

	// Since 1.3.0 the record is of every change of the servers' template (servers_change.go),
	// not only of memory. Way is how it is made (WayInPlace, WayWarmRestart, WayStartedEmpty;
	// "" in a record of 1.2.0: memory in place), Change what it changes, in words.
	Way    string `json:"way,omitempty"`
	Change string `json:"change,omitempty"`
	// Memory says the change includes memory (memcached's -m, its container's resources).
	Memory bool `json:"memory,omitempty"`
	// Restart is the server whose memcached restarts now (WayWarmRestart, one at a time).
	Restart *serverRestart `json:"restart,omitempty"`
	// Progress is when the last server was done: the timeout counts from it.
	Progress *metav1.Time `json:"progress,omitempty"`
	// Fits says every held server holds no more memory than a shrink's new limit (asked once).
	Fits bool `json:"fits,omitempty"`
	// Warm and Empty are the servers restarted so far: with their items, and without (server →
	// why).
	Warm  []string          `json:"warm,omitempty"`
	Empty map[string]string `json:"empty,omitempty"`
}

// serverRestart is a server whose memcached the operator restarts in its pod, and what it held.
type serverRestart struct {
	Server string `json:"server"`
	// Items memcached held right before, and the restarts its container had.
	Items    uint64      `json:"items"`
	Restarts int32       `json:"restarts"`
	At       metav1.Time `json:"at"`
}

// last is when the record last moved: its outcome, else the last server done, else the hold.
func (r resizeRecord) last() *metav1.Time {
	switch {
	case r.At != nil:
		return r.At
	case r.Progress != nil:
		return r.Progress
	}
	return &r.Since
}

// memoryChange says whether the record's change is to memory (the Resizing condition's).
func (r resizeRecord) memoryChange() bool {
	return r.Way == "" || r.Memory
}

// what says in words what the record's change is.
func (r resizeRecord) what() string {
	if r.Change != "" {
		return r.Change
	}
	return r.change()
}

// change says what the record's memory change is, in words.
func (r resizeRecord) change() string {
	var parts []string
	if r.FromMB != r.ToMB {
		parts = append(parts, fmt.Sprintf("item memory %d → %d MiB", r.FromMB, r.ToMB))
	}
	if r.FromLimit != "" && r.ToLimit != "" && r.FromLimit != r.ToLimit {
		parts = append(parts, fmt.Sprintf("container memory %s → %s", r.FromLimit, r.ToLimit))
	}
	if len(parts) == 0 {
		parts = append(parts, "container resources") // cpu, or a memory request: resized in place alike
	}
	return strings.Join(parts, ", ")
}

// resizeRecordOf reads the ResizeHold annotation of a StatefulSet; nil when it has none (or one
// that does not parse: a hold the operator did not make is none of its business).
func resizeRecordOf(s *appsv1.StatefulSet) *resizeRecord {
	v, ok := s.Annotations[labels.ResizeHold]
	if !ok {
		return nil
	}
	r := &resizeRecord{}
	if err := json.Unmarshal([]byte(v), r); err != nil {
		return nil
	}
	return r
}

func (r resizeRecord) annotation() string {
	b, _ := json.Marshal(r) // plain fields
	return string(b)
}

// serverMemory is what a memory change changes: memcached's -m, in MiB, and its container's
// resources.
type serverMemory struct {
	MB        int32
	Resources corev1.ResourceRequirements
}

func (m serverMemory) limit() string {
	if q, ok := m.Resources.Limits[corev1.ResourceMemory]; ok {
		return q.String()
	}
	return ""
}

// memcachedContainer is the memcached container of a pod spec, or nil.
func memcachedContainer(spec *corev1.PodSpec) *corev1.Container {
	for i := range spec.Containers {
		if spec.Containers[i].Name == labels.ChartName {
			return &spec.Containers[i]
		}
	}
	return nil
}

// itemMemoryArg is the index in args of the value of memcached's -m, as the chart writes it (two
// arguments), or -1.
func itemMemoryArg(args []string) int {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-m" {
			return i + 1
		}
	}
	return -1
}

// memoryOf is the memory of the memcached container of a pod spec; false when the spec has none
// the chart made.
func memoryOf(spec *corev1.PodSpec) (serverMemory, bool) {
	c := memcachedContainer(spec)
	if c == nil {
		return serverMemory{}, false
	}
	i := itemMemoryArg(c.Args)
	if i < 0 {
		return serverMemory{}, false
	}
	mb, err := strconv.ParseInt(c.Args[i], 10, 32)
	if err != nil {
		return serverMemory{}, false
	}
	return serverMemory{MB: int32(mb), Resources: withDefaultRequests(c.Resources)}, true
}

// withDefaultRequests are resources as the API server keeps them for a pod: a limit without a
// request is its request too. (A pod template keeps them as written; its pods do not.)
func withDefaultRequests(r corev1.ResourceRequirements) corev1.ResourceRequirements {
	r = *r.DeepCopy()
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			r.Requests[name] = q.DeepCopy()
		}
	}
	return r
}

// releaseManifest is a release's manifest, or "" for none.
func releaseManifest(rel *release.Release) string {
	if rel == nil {
		return ""
	}
	return rel.Manifest
}

// statefulSetOf is the StatefulSet of a release manifest (the chart renders one), or nil.
func statefulSetOf(manifest string) *appsv1.StatefulSet {
	if s := objectsOf[appsv1.StatefulSet](manifest, "apps/v1", "StatefulSet"); len(s) > 0 {
		return s[0]
	}
	return nil
}

// objectsOf decodes the objects of a kind in a release manifest, in no particular order.
func objectsOf[T any](manifest, apiVersion, kind string) []*T {
	var out []*T
	for _, doc := range releaseutil.SplitManifests(manifest) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil || meta.Kind != kind || meta.APIVersion != apiVersion {
			continue
		}
		o := new(T)
		if err := yaml.Unmarshal([]byte(doc), o); err == nil {
			out = append(out, o)
		}
	}
	return out
}

// resizeSupport says whether the cluster resizes pods in place: whether its API server serves the
// pods/resize subresource (Kubernetes 1.33 and later with InPlacePodVerticalScaling, which is GA
// and always on from 1.35), read from discovery, not from the version, and again after
// resizeSupportTTL.
type resizeSupport struct {
	discovery discovery.DiscoveryInterface
	mu        sync.Mutex
	served    bool
	checked   time.Time
}

const resizeSupportTTL = 10 * time.Minute

func (s *resizeSupport) inPlace() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.checked.IsZero() && time.Since(s.checked) < resizeSupportTTL {
		return s.served, nil
	}
	list, err := s.discovery.ServerResourcesForGroupVersion("v1")
	if err != nil {
		return false, fmt.Errorf("discover the resources of API v1: %w", err)
	}
	s.served = false
	for _, r := range list.APIResources {
		if r.Name == "pods/resize" {
			s.served = true
		}
	}
	s.checked = time.Now()
	return s.served, nil
}

// errNoResize says why a cluster gets the rollout.
const errNoResize = "this cluster does not resize pods in place: its API server does not serve pods/resize (Kubernetes before 1.33, or InPlacePodVerticalScaling off)"

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

// BeforeUpgrade decides, before Helm applies an upgrade of a Memcached's release, whether the
// upgrade's change of the servers is made in place: then it holds the StatefulSet's rollout; else
// it records why not, and the StatefulSet rolls the servers.
func (r *MemcachedResizeReconciler) BeforeUpgrade(ctx context.Context, cr client.Object, last, target *release.Release) error {
	if err := r.servingBeforeUpgrade(ctx, cr, target); err != nil {
		return err
	}
	if last == nil || last.Info == nil || last.Info.Status != release.StatusDeployed {
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
		if ran := statefulSetOf(releaseManifest(held)); ran != nil {
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
	record := resizeRecord{Release: int32(last.Version), Revision: live.Status.CurrentRevision, FromMB: plan.before.MB, ToMB: plan.after.MB,
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
	for _, a := range askServers(ctx, pods, r.Reach, func(ctx context.Context, srv operand.Server) (uint64, error) {
		return operand.ReadAllocated(ctx, srv, cacheTimeout)
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
	from, to := statefulSetOf(releaseManifest(fromRel)), statefulSetOf(releaseManifest(toRel))
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
func (r *MemcachedResizeReconciler) readStats(ctx context.Context, p *corev1.Pod) (operand.Stats, error) {
	srv, err := r.Reach.server(ctx, p)
	if err != nil {
		return operand.Stats{}, err
	}
	return operand.ReadStats(ctx, srv, cacheTimeout)
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
func setLimitAt(ctx context.Context, srv operand.Server, mb int32) error {
	ctx, cancel := context.WithTimeout(ctx, cacheTimeout)
	defer cancel()
	s, err := operand.ReadStats(ctx, srv, cacheTimeout)
	if err != nil {
		return fmt.Errorf("read the stats: %w", err)
	}
	if s.LimitMaxBytes == uint64(mb)<<20 {
		return nil
	}
	if err := operand.SetMemoryLimit(ctx, srv, mb, cacheTimeout); err != nil {
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
	for _, a := range askServers(ctx, resized, r.Reach, func(ctx context.Context, srv operand.Server) (struct{}, error) {
		return struct{}{}, setLimitAt(ctx, srv, want.MB)
	}) {
		failed = errors.Join(failed, a.err) // tried again with the error's back-off
	}
	return failed
}

// letGo ends a hold without resizing the rest in place: the StatefulSet then replaces the servers
// not yet resized, one at a time.
func (r *MemcachedResizeReconciler) letGo(ctx context.Context, mc client.Object, servers *appsv1.StatefulSet, rec resizeRecord, why string) error {
	rec.Outcome, rec.Why, rec.At, rec.Blocked, rec.Restart = outcomeRolledOut, why, ptr.To(metav1.Now()), "", nil
	if rec.Way != "" {
		rec.Way = WayStartedEmpty
	}
	if err := r.release(ctx, servers, rec); err != nil {
		return err
	}
	r.announceRollout(mc, servers, rec)
	return nil
}

// abandon ends a hold that nothing came of (the upgrade it was made for was not applied, and the
// servers run what they ran): the partition and the record go, as if it had never been.
func (r *MemcachedResizeReconciler) abandon(ctx context.Context, servers *appsv1.StatefulSet, why string) error {
	if err := r.writeHold(ctx, servers, nil, true); err != nil {
		return err
	}
	log.FromContext(ctx).Info("the hold for an in-place resize ended without a change", "statefulSet", servers.Name, "why", why)
	return nil
}

// record writes the resize's record, the hold staying as it is.
func (r *MemcachedResizeReconciler) record(ctx context.Context, servers *appsv1.StatefulSet, rec resizeRecord) error {
	return r.writeHold(ctx, servers, &rec, false)
}

// release lets go of the StatefulSet's rollout and records the outcome.
func (r *MemcachedResizeReconciler) release(ctx context.Context, servers *appsv1.StatefulSet, rec resizeRecord) error {
	return r.writeHold(ctx, servers, &rec, true)
}

// writeHold writes rec on the StatefulSet as its ResizeHold annotation (nil: the annotation goes)
// and, with letGo, lets go of its rollout (partition 0), in one patch on the version read.
func (r *MemcachedResizeReconciler) writeHold(ctx context.Context, servers *appsv1.StatefulSet, rec *resizeRecord, letGo bool) error {
	s := servers.DeepCopy()
	patch := client.MergeFromWithOptions(servers, client.MergeFromWithOptimisticLock{})
	if letGo && s.Spec.UpdateStrategy.RollingUpdate != nil {
		s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(int32(0))
	}
	if rec == nil {
		delete(s.Annotations, labels.ResizeHold)
	} else {
		metav1.SetMetaDataAnnotation(&s.ObjectMeta, labels.ResizeHold, rec.annotation())
	}
	if err := r.Patch(ctx, s, patch); err != nil {
		if letGo {
			return fmt.Errorf("let go of the rollout of StatefulSet %s: %w", s.Name, err)
		}
		return fmt.Errorf("record the change of StatefulSet %s: %w", s.Name, err)
	}
	*servers = *s // a later write of the same reconcile is on the version written
	return nil
}

// partitionOf is the StatefulSet's partition: the servers below it are not replaced.
func partitionOf(s *appsv1.StatefulSet) int32 {
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		return *ru.Partition
	}
	return 0
}

func replicasOf(s *appsv1.StatefulSet) int32 { return ptr.Deref(s.Spec.Replicas, 1) }

// observeChange renders the StatefulSet's record of the last change of its servers (none: no
// condition): the Resizing condition for a change of memory, as since 1.2.0, and CacheWarm, whether
// the servers kept their items through it (from 1.3.0). While the change is made in place,
// Progressing says so: the StatefulSet counts the servers held for it as not updated, though they
// are changed, not replaced.
func observeChange(st *cachev1.MemcachedStatus, servers *appsv1.StatefulSet, pods []corev1.Pod) {
	if servers == nil {
		return
	}
	rec := resizeRecordOf(servers)
	if rec != nil {
		observeRecord(st, servers, rec, pods)
	}
	if e := emptyStartOf(servers); e != nil && (rec == nil || !e.At.Before(rec.last())) {
		// A server started empty after the last change the operator made (stats controller).
		setMemcachedCondition(st, ConditionCacheWarm, metav1.ConditionFalse, WayStartedEmpty,
			fmt.Sprintf("server %s started empty at %s: %s", e.Server, timeOf(&e.At), e.Why))
	}
}

// observeRecord renders the record of the servers' last change (observeChange).
func observeRecord(st *cachev1.MemcachedStatus, servers *appsv1.StatefulSet, rec *resizeRecord, pods []corev1.Pod) {
	if rec.Outcome == outcomeRolledOut && servers.Status.UpdateRevision == rec.Revision {
		// The record of a rollout is written before Helm applies the change: while the
		// StatefulSet's template is still the one the servers ran then, nothing was rolled out
		// (the upgrade failed, or the StatefulSet controller has not seen it yet), and no server
		// started empty.
		return
	}
	done := 0
	for _, p := range pods {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == servers.UID && p.Labels[appsv1.StatefulSetRevisionLabel] == servers.Status.UpdateRevision {
			done++
		}
	}
	n := replicasOf(servers)
	done = min(done, int(n))
	rolledOut := rolloutOfServers(servers).complete()
	if rec.memoryChange() {
		observeResize(st, rec, done, n, rolledOut)
	}
	inPlace := fmt.Sprintf("%s: writing onto the servers in place, none restarted: %d of %d done", rec.what(), done, n)
	if rec.Way == WayWarmRestart {
		inPlace = fmt.Sprintf("%s: restarting the servers in their pods one at a time, each with its items: %d of %d done", rec.what(), done, n)
	}
	if rec.Outcome == outcomeResizing {
		switch {
		case rec.Blocked != "":
			setMemcachedCondition(st, ConditionProgressing, metav1.ConditionFalse, ReasonResizeBlocked, memcachedCondition(*st, ConditionResizing).Message)
		case rec.memoryChange() && rec.Way != WayWarmRestart:
			setMemcachedCondition(st, ConditionProgressing, metav1.ConditionTrue, ReasonResizingInPlace, memcachedCondition(*st, ConditionResizing).Message)
		default:
			setMemcachedCondition(st, ConditionProgressing, metav1.ConditionTrue, rec.Way, inPlace)
		}
	}
	if rec.Way == "" {
		return // a record of 1.2.0's memory change
	}
	empty := ""
	if len(rec.Empty) > 0 {
		var which []string
		for _, server := range slices.Sorted(maps.Keys(rec.Empty)) {
			which = append(which, fmt.Sprintf("server %s started empty: %s", server, rec.Empty[server]))
		}
		empty = strings.Join(which, "; ")
	}
	switch rec.Outcome {
	case outcomeResizing:
		if empty != "" {
			setMemcachedCondition(st, ConditionCacheWarm, metav1.ConditionFalse, WayStartedEmpty, inPlace+"; "+empty)
		} else {
			setMemcachedCondition(st, ConditionCacheWarm, metav1.ConditionTrue, rec.Way, inPlace)
		}
	case outcomeInPlace:
		switch {
		case empty != "":
			setMemcachedCondition(st, ConditionCacheWarm, metav1.ConditionFalse, WayStartedEmpty,
				fmt.Sprintf("%s: the servers restarted in their pods at %s, %d with their items; %s", rec.what(), timeOf(rec.At), len(rec.Warm), empty))
		case rec.Way == WayWarmRestart:
			setMemcachedCondition(st, ConditionCacheWarm, metav1.ConditionTrue, WayWarmRestart,
				fmt.Sprintf("%s: every server restarted in its pod with its items, one at a time, by %s", rec.what(), timeOf(rec.At)))
		default:
			setMemcachedCondition(st, ConditionCacheWarm, metav1.ConditionTrue, WayInPlace,
				fmt.Sprintf("%s: made in place at %s, no server restarted", rec.what(), timeOf(rec.At)))
		}
	case outcomeRolledOut:
		if rolledOut {
			setMemcachedCondition(st, ConditionCacheWarm, metav1.ConditionFalse, WayStartedEmpty,
				fmt.Sprintf("%s: rolled out one server at a time, each started empty, because %s", rec.what(), rec.Why))
		} else {
			setMemcachedCondition(st, ConditionCacheWarm, metav1.ConditionFalse, WayStartedEmpty,
				fmt.Sprintf("%s: rolling out one server at a time, each starts empty, because %s", rec.what(), rec.Why))
		}
	}
}

// observeResize is the Resizing condition of a record of a memory change, done of n servers
// changed.
func observeResize(st *cachev1.MemcachedStatus, rec *resizeRecord, done int, n int32, rolledOut bool) {
	switch rec.Outcome {
	case outcomeResizing:
		if rec.Blocked != "" {
			setMemcachedCondition(st, ConditionResizing, metav1.ConditionTrue, ReasonResizeBlocked,
				fmt.Sprintf("%s waits, the servers kept as they are (a rollout would be refused its new pods alike): %s", rec.change(), rec.Blocked))
			return
		}
		setMemcachedCondition(st, ConditionResizing, metav1.ConditionTrue, ReasonResizingInPlace,
			fmt.Sprintf("%s in place, without a restart: %d of %d servers resized", rec.change(), done, n))
	case outcomeInPlace:
		setMemcachedCondition(st, ConditionResizing, metav1.ConditionFalse, ReasonResizedInPlace,
			fmt.Sprintf("%s: made in place at %s, no server restarted", rec.change(), timeOf(rec.At)))
	case outcomeRolledOut:
		if rolledOut {
			setMemcachedCondition(st, ConditionResizing, metav1.ConditionFalse, ReasonRolledOut,
				fmt.Sprintf("%s: rolled out one server at a time, each started empty, because %s", rec.change(), rec.Why))
		} else {
			setMemcachedCondition(st, ConditionResizing, metav1.ConditionTrue, ReasonRollingOut,
				fmt.Sprintf("%s: rolling out one server at a time, each starts empty, because %s", rec.change(), rec.Why))
		}
	}
}

func timeOf(t *metav1.Time) string {
	if t == nil {
		return "an unknown time"
	}
	return t.UTC().Format(time.RFC3339)
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

// resizeStatus is what the kubelet reports of a pod's resize: its conditions and the memcached
// container's resources.
func resizeStatus(p *corev1.Pod) []any {
	var out []any
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress {
			out = append(out, c.Type, c.Status, c.Reason)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == labels.ChartName && cs.Resources != nil {
			out = append(out, *cs.Resources)
		}
	}
	return out
}
