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
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/memcachedstatus"
	"github.com/example/memcached-operator/controllers/internal/metrics"
	"github.com/example/memcached-operator/controllers/internal/progress"
	"github.com/example/memcached-operator/controllers/internal/serverset"
	"github.com/example/memcached-operator/controllers/internal/servertalk"
	"github.com/example/memcached-operator/controllers/internal/texts"
	"github.com/example/memcached-operator/internal/helm"
	"github.com/example/memcached-operator/internal/labels"
	"github.com/example/memcached-operator/internal/memcache"
	"github.com/example/memcached-operator/internal/rollout"
)

// The decision, before Helm applies an upgrade of a Memcached's release, of how its change of the
// servers is made (internal/rollout), and the StatefulSet's hold on its rollout while the servers
// are changed in place (spec.updateStrategy.rollingUpdate.partition). The change is recorded in
// status.rollout before the hold, each write on the version read: the servers reconciler, which
// drives the change, writes there too, and neither may overwrite what the other wrote meanwhile.

// holdWait is how long a change waits for the upgrade it was recorded for: Helm applies it right
// after BeforeUpgrade, so one not applied by then failed.
const holdWait = time.Minute

// BeforeUpgrade decides, before Helm applies an upgrade of a Memcached's release, how the
// upgrade's change of the servers is made: in place (the StatefulSet's rollout held, the servers
// changed by the servers reconciler), or rolled out, each server starting empty (recorded with
// why). A change already in flight takes a second one in when every server can take it the same
// way; else the servers roll out.
func (r *Reconciler) BeforeUpgrade(ctx context.Context, cr client.Object, last, target *helm.Rendered) error {
	if err := r.servingBeforeUpgrade(ctx, cr, target); err != nil {
		return err
	}
	if last == nil || !last.Deployed {
		return nil // a failed or pending release: what the servers run is not the last manifest's
	}
	from, to := serverset.StatefulSetOf(last.Manifest), serverset.StatefulSetOf(target.Manifest)
	if from == nil || to == nil || from.Name != to.Name {
		return nil
	}
	// Each try reads the Memcached and the StatefulSet again: the servers reconciler may have
	// written either since.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live := &appsv1.StatefulSet{}
		if err := r.Live.Get(ctx, client.ObjectKey{Namespace: cr.GetNamespace(), Name: to.Name}, live); err != nil {
			return client.IgnoreNotFound(err) // none yet: Helm creates it
		}
		if !serverset.MadeForRelease(live, cr) {
			return nil // not the release's: Helm's own check or the fence refuses it
		}
		mc := &cachev1.Memcached{}
		if err := r.Live.Get(ctx, client.ObjectKeyFromObject(cr), mc); err != nil {
			return err
		}
		if mc.UID != cr.GetUID() {
			return nil
		}
		return r.decide(ctx, mc, live, last, &from.Spec.Template, to)
	})
}

// decide is BeforeUpgrade's decision on the versions of the Memcached and the StatefulSet read.
func (r *Reconciler) decide(ctx context.Context, mc *cachev1.Memcached, live *appsv1.StatefulSet, last *helm.Rendered, from *corev1.PodTemplateSpec, target *appsv1.StatefulSet) error {
	to := &target.Spec.Template
	rs := mc.Status.Rollout.DeepCopy()
	if rs == nil {
		rs = &cachev1.RolloutStatus{}
	}
	now := metav1.Now().Rfc3339Copy()
	if c := rs.Change; rollout.InFlight(c) && serverset.PartitionOf(live) > 0 {
		// A change in flight: the servers run the template of their releases (status.rollout).
		_, _, why, err := r.foldPlan(ctx, mc, live, rs, to)
		if err != nil {
			return err
		}
		if why == "" {
			c.UpgradeFrom, c.UpgradeTime = last.Version, &now // the change goes on once it is applied
			return r.writeRollout(ctx, mc, rs)
		}
		announce := r.rollOut(mc, live, rs, "another change came while the servers were changed in place ("+why+")")
		if err := r.writeRollout(ctx, mc, rs); err != nil {
			return err
		}
		announce()
		return r.SetPartition(ctx, live, 0)
	}
	plan := rollout.Plan(from, to)
	if plan.Way == "" {
		return nil // the servers' template does not change: nothing to decide
	}
	why := plan.Why
	if why == "" {
		why = r.inPlaceRefusal(ctx, live, plan)
	}
	// Servers the upgrade adds (ordinals from the smaller of the two counts on) start with the
	// new template; the others are held.
	held := min(serverset.ReplicasOf(live), serverset.ReplicasOf(target))
	c := &cachev1.ServersChange{What: plan.What(), Way: plan.Way, Phase: cachev1.RolloutChanging, FromRelease: last.Version,
		Revision: live.Status.CurrentRevision, Held: held, Memory: plan.MemoryChange(), Since: now, UpgradeFrom: last.Version, UpgradeTime: &now}
	rs.Change = c
	for i := range rs.Servers {
		rs.Servers[i].Release, rs.Servers[i].Restart = c.FromRelease, nil
	}
	if why != "" {
		announce := r.rollOut(mc, live, rs, why)
		if err := r.writeRollout(ctx, mc, rs); err != nil {
			return err
		}
		announce()
		return nil
	}
	if held == 0 {
		rs.Change = nil
		return r.writeRollout(ctx, mc, rs) // no server to change
	}
	if err := r.writeRollout(ctx, mc, rs); err != nil {
		return err
	}
	if err := r.SetPartition(ctx, live, held); err != nil {
		return err
	}
	switch {
	case plan.Way == cachev1.WayWarmRestart:
		r.Recorder.Eventf(mc, live, corev1.EventTypeNormal, cachev1.WayWarmRestart, "ChangeServers",
			"%s: restarting %s one at a time in their pods, each with its items", c.What, texts.Count(held, "server", "servers"))
	case plan.Memory:
		r.Recorder.Eventf(mc, live, corev1.EventTypeNormal, cachev1.ReasonResizingInPlace, "ResizeServers",
			"%s: resizing %s in place, without a restart", c.What, texts.Count(held, "server", "servers"))
	default:
		r.Recorder.Eventf(mc, live, corev1.EventTypeNormal, cachev1.WayInPlace, "ChangeServers",
			"%s: writing onto %s in place, without a restart", c.What, texts.Count(held, "server", "servers"))
	}
	return nil
}

// foldPlan is how a change in flight is made to the template to from every release its held
// servers run (each server's, and the change's fromRelease for those not changed yet): the way
// that restarts the most (a warm restart if any server's memcached restarts), the memory change of
// the first server whose memory changes, and why not in place when a server cannot take it (the
// servers then roll out).
func (r *Reconciler) foldPlan(ctx context.Context, mc *cachev1.Memcached, servers *appsv1.StatefulSet, rs *cachev1.RolloutStatus, to *corev1.PodTemplateSpec) (way string, memory *cachev1.MemoryChange, why string, err error) {
	releases := []int32{rs.Change.FromRelease}
	for _, e := range rs.Servers {
		if n, ok := serverset.OrdinalOf(servers.Name, e.Name); ok && n < rs.Change.Held && e.Release > 0 && !slices.Contains(releases, e.Release) {
			releases = append(releases, e.Release)
		}
	}
	for _, rel := range releases {
		ran, err := r.templateOf(ctx, mc, rel)
		if err != nil {
			return "", nil, "", err
		}
		if ran == nil {
			return "", nil, fmt.Sprintf("the record of release revision %d that servers run cannot be read", rel), nil
		}
		plan := rollout.Plan(ran, to)
		switch {
		case plan.Way == cachev1.WayStartedEmpty:
			return "", nil, plan.Why, nil
		case plan.Way == cachev1.WayWarmRestart, way == "":
			way = cmpOr(plan.Way, way)
		}
		if memory == nil {
			memory = plan.MemoryChange()
		}
	}
	return way, memory, "", nil
}

// templateOf is the servers' template of release revision rel of mc, from its sealed record; nil
// when there is none.
func (r *Reconciler) templateOf(ctx context.Context, mc *cachev1.Memcached, rel int32) (*corev1.PodTemplateSpec, error) {
	rendered, err := helm.Release(ctx, r.Client, r.Records, mc, rel)
	if err != nil {
		return nil, err
	}
	if s := serverset.StatefulSetOf(serverset.ManifestOf(rendered)); s != nil {
		return &s.Spec.Template, nil
	}
	return nil, nil
}

// rollOut records that the change of rs is rolled out, each server starting empty, and why; it
// returns what says so (an Event, the metrics), for once that is written. The caller lets go of
// the hold.
func (r *Reconciler) rollOut(mc *cachev1.Memcached, servers *appsv1.StatefulSet, rs *cachev1.RolloutStatus, why string) (announce func()) {
	c, now := rs.Change, metav1.Now().Rfc3339Copy()
	c.Phase, c.Way, c.Message, c.CompletionTime, c.UpgradeFrom, c.UpgradeTime = cachev1.RolloutRolledOut, cachev1.WayStartedEmpty, why, &now, 0, nil
	for i := range rs.Servers {
		rs.Servers[i].Restart = nil
	}
	what, memory := c.What, c.Memory != nil
	return func() {
		reason := cachev1.WayStartedEmpty
		if memory {
			reason = "ResizeByRollout"
			metrics.CountResize("rollout")
		}
		r.Recorder.Eventf(mc, servers, corev1.EventTypeNormal, reason, "ChangeServers",
			"%s is rolled out one server at a time, each starting empty: %s", what, why)
		metrics.CountChange(cachev1.WayStartedEmpty)
	}
}

// writeRollout writes rs as mc's status.rollout, on the version of mc read: the other conditions
// and fields of the servers' status stay as they are live (the servers reconciler renders them
// from it next). mc then holds what was written.
func (r *Reconciler) writeRollout(ctx context.Context, mc *cachev1.Memcached, rs *cachev1.RolloutStatus) error {
	st := mc.Status.DeepCopy()
	st.Rollout = rs
	before := mc.ResourceVersion
	rv, err := memcachedstatus.OperandWriter.WriteOn(ctx, r.Client, mc, st, before)
	if err != nil {
		return err
	}
	mc.Status, mc.ResourceVersion = *st, rv
	if rv != before {
		r.replaced.Store(client.ObjectKeyFromObject(mc), before)
	}
	return nil
}

// SetPartition sets the StatefulSet's partition on the spec read: a conflict means its spec
// changed since (a second writer, Helm's upgrade), and the caller reads it again. The StatefulSet
// controller's status writes do not change the spec, and pass. A hold (partition > 0) writes a new
// HoldToken with it; letting go (0) removes the token, only if it is still the one read: a hold
// made for a new change between the read and this write (whose partition may be the same number,
// which leaves the generation as it was) is never let go.
func (r *Reconciler) SetPartition(ctx context.Context, s *appsv1.StatefulSet, partition int32) error {
	ops := []map[string]any{{"op": "test", "path": "/metadata/generation", "value": s.Generation}}
	token, held := s.Annotations[labels.HoldToken]
	path := "/metadata/annotations/" + strings.ReplaceAll(labels.HoldToken, "/", "~1")
	switch {
	case partition > 0 && s.Annotations == nil:
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations", "value": map[string]string{labels.HoldToken: strconv.FormatInt(time.Now().UnixNano(), 10)}})
	case partition > 0:
		ops = append(ops, map[string]any{"op": "add", "path": path, "value": strconv.FormatInt(time.Now().UnixNano(), 10)})
	case held:
		ops = append(ops, map[string]any{"op": "test", "path": path, "value": token}, map[string]any{"op": "remove", "path": path})
	}
	if s.Spec.UpdateStrategy.RollingUpdate == nil {
		ops = append(ops, map[string]any{"op": "add", "path": "/spec/updateStrategy/rollingUpdate", "value": map[string]any{"partition": partition}})
	} else {
		ops = append(ops, map[string]any{"op": "add", "path": "/spec/updateStrategy/rollingUpdate/partition", "value": partition})
	}
	body, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	gen := s.Generation
	if err := r.Live.Patch(ctx, s, client.RawPatch(types.JSONPatchType, body)); err != nil {
		if apierrors.IsConflict(err) || r.changedSince(ctx, s, gen, token, err) {
			return apierrors.NewConflict(appsv1.Resource("statefulsets"), s.Name, fmt.Errorf("its spec or hold changed since it was read: %w", err))
		}
		return fmt.Errorf("set the partition of StatefulSet %s to %d: %w", s.Name, partition, err)
	}
	return nil
}

// changedSince says whether a JSON patch of s was refused (422) because s changed since it was
// read at generation gen with hold token: the API server's answer to a failed test operation does
// not say which test failed, so the StatefulSet is read again.
func (r *Reconciler) changedSince(ctx context.Context, s *appsv1.StatefulSet, gen int64, token string, err error) bool {
	if !apierrors.IsInvalid(err) {
		return false
	}
	live := &appsv1.StatefulSet{}
	return r.Live.Get(ctx, client.ObjectKeyFromObject(s), live) == nil && (live.Generation != gen || live.Annotations[labels.HoldToken] != token)
}

// inPlaceRefusal says why the StatefulSet's servers cannot take the plan's change in place, or
// "" when they can: the last rollout must be complete (every server runs the revision the hold
// names), and for memory the cluster must resize pods. It asks the servers nothing: it runs on a
// Helm worker, which every tenant's installs share (a shrink's fit is asked by the servers
// reconciler).
func (r *Reconciler) inPlaceRefusal(ctx context.Context, live *appsv1.StatefulSet, plan rollout.Change) string {
	if plan.Memory {
		ok, err := r.Support.inPlace()
		if err != nil {
			return fmt.Sprintf("the operator could not tell whether the cluster resizes pods in place: %v", err)
		}
		if !ok {
			return errNoResize
		}
	}
	// Every server must run the StatefulSet's revision. Whether its controller has seen the
	// latest generation does not matter here: another writer's change of the spec (one that
	// changes no pod) must not turn a change in place into a rollout.
	ro := progress.OfStatefulSet(live)
	if ro.Updated != ro.Want || ro.Replicas != ro.Want || ro.Available < ro.Want || live.Status.CurrentRevision != live.Status.UpdateRevision {
		// The StatefulSet's status lags its pods: a change just made in place relabels them with
		// its revision, which its controller counts a moment later. The pods say it first.
		if r.serversRunRevision(ctx, live) {
			return ""
		}
		return fmt.Sprintf("the servers were still rolling out (%s updated, %d available)", texts.CountOf(ro.Updated, ro.Want, "server", "servers"), ro.Available)
	}
	return ""
}

// serversRunRevision says whether every server of the StatefulSet has its pod, ready, of the
// StatefulSet's update revision, as the cache holds them.
func (r *Reconciler) serversRunRevision(ctx context.Context, s *appsv1.StatefulSet) bool {
	if s.Status.UpdateRevision == "" || s.Spec.Selector == nil {
		return false
	}
	list := &corev1.PodList{}
	if err := r.List(ctx, list, client.InNamespace(s.Namespace), client.MatchingLabels(s.Spec.Selector.MatchLabels)); err != nil {
		return false
	}
	pods := serverset.PodsOf(s, list.Items)
	for n := range serverset.ReplicasOf(s) {
		if p := pods[n]; p == nil || !serverset.PodReady(p) || p.Labels[appsv1.StatefulSetRevisionLabel] != s.Status.UpdateRevision {
			return false
		}
	}
	return true
}

// shrinkRefusal says why the held servers cannot shrink in place to the item memory after, or ""
// when they can: each must hold no more than it (memcached keeps what it has allocated). All are
// asked at once, within one deadline for the cache, off the workers: ok is false until they
// answered.
func (r *Reconciler) shrinkRefusal(mc *cachev1.Memcached, pods []*corev1.Pod, afterMB int32) (why string, ok bool) {
	for _, p := range pods {
		if !serverset.PodReady(p) || p.Status.PodIP == "" {
			return fmt.Sprintf("server %s is not ready, so what it holds is unknown", p.Name), true
		}
	}
	var uids []string
	for _, p := range pods {
		uids = append(uids, string(p.UID))
	}
	slices.Sort(uids)
	v, _, ok := r.talk.Ask(client.ObjectKeyFromObject(mc), fmt.Sprintf("fits %d MiB %v", afterMB, uids), func(ctx context.Context) (any, error) {
		for _, a := range servertalk.Ask(ctx, pods, r.Reach, func(ctx context.Context, srv memcache.Server) (uint64, error) {
			return memcache.ReadAllocated(ctx, srv, servertalk.CacheTimeout)
		}) {
			if a.Err != nil {
				return fmt.Sprintf("a server did not say how much memory it holds: %v", a.Err), nil
			}
			if a.Value > uint64(afterMB)<<20 {
				return fmt.Sprintf("server %s holds %d MiB, above the new %d MiB: memcached gives memory back only as its items expire or are deleted",
					a.Pod.Name, a.Value>>20, afterMB), nil
			}
		}
		return "", nil
	})
	if !ok {
		return "", false
	}
	return v.(string), true
}
