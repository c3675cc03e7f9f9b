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
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/memcachedstatus"
	"github.com/example/memcached-operator/controllers/internal/metrics"
	"github.com/example/memcached-operator/controllers/internal/serverset"
	"github.com/example/memcached-operator/controllers/internal/servertalk"
	"github.com/example/memcached-operator/controllers/internal/texts"
	"github.com/example/memcached-operator/internal/labels"
	"github.com/example/memcached-operator/internal/rollout"
)

// How a cache's servers change: one plan per cache, status.rollout, driven by the servers
// reconciler (reconciler.go) and by nothing else, and read by it from the cluster on every
// step, so that an operator restart, a new leader or a second change goes on from what is true.
//
//  1. Before Helm applies an upgrade that changes the servers' template, BeforeUpgrade
//     (hold.go) decides how (internal/rollout.Plan): in place, when the cluster and every
//     server allow it: the change is recorded, then the StatefulSet's rollout held
//     (spec.updateStrategy.rollingUpdate.partition); else it is recorded as rolled out, with why.
//  2. Once the upgrade is applied, advance takes each held server, the highest first, one step
//     at a time (step.go): its labels and annotations, its memory (pods/resize, then
//     memcached's cache_memlimit; memcached first when shrinking), its images (memcached's a warm
//     restart in its pod, one server at a time, each back and serving before the next), then the
//     StatefulSet's update revision on its pod, which it now runs.
//  3. With every server done it records the change complete, then lets go of the rollout, which
//     has nothing left to replace.
//
// Each server is known by its pod's UID: a pod replaced mid-change (a drain, an eviction) is that
// server's event: it started empty, and its new pod (made from the template before) is taken to
// the change like the others; the change goes on for the rest. A second change that every server
// can take the same way is folded in; one that cannot rolls the servers out, as it would have
// alone. No timeout ends a change: one that stalls says what it waits for (Progressing False,
// ServersStalled) and goes on trying. What cannot be made in place at all (no pods/resize, a
// kubelet that cannot resize, a server holding more than a smaller memory) is rolled out, each
// server starting empty, and status says why; a namespace's policy refusing a resize holds the
// servers as they are (Blocked) until it allows it.

const (
	// rolloutPoll is how soon a change that waits for a kubelet, the StatefulSet controller or a
	// server looks again (the pods' events bring it back sooner).
	rolloutPoll = 2 * time.Second
	// blockedRetry is how often a step the namespace's policy refuses is tried again (a change of
	// the spec or of a ResourceQuota brings it back sooner, though the API server's admission may
	// not have seen a quota's change yet).
	blockedRetry = 10 * time.Second
)

// advance brings status.rollout up to date with the servers' pods, and takes a change in flight
// one step further. mc and servers are as they are live when a change is in flight. It returns
// status.rollout as it now is, when to look again, and what says what happened (Events, metrics),
// for once status.rollout is written: a write that conflicts is made again, its Events not.
func (r *Reconciler) advance(ctx context.Context, mc *cachev1.Memcached, servers *appsv1.StatefulSet, deployed int32, list []corev1.Pod) (*cachev1.RolloutStatus, time.Duration, func(), error) {
	var later []func()
	announce := func() {
		for _, f := range later {
			f()
		}
	}
	if servers == nil {
		return mc.Status.Rollout, 0, announce, nil
	}
	if adopted, err := r.adoptRecord(ctx, mc, servers); err != nil || adopted {
		return mc.Status.Rollout, memcachedstatus.ConflictRetry, announce, err
	}
	rs := mc.Status.Rollout.DeepCopy()
	if rs == nil {
		rs = &cachev1.RolloutStatus{}
	}
	now := metav1.Now().Rfc3339Copy()
	pods := serverset.PodsOf(servers, list)
	var seen []rollout.Seen
	rs.Servers, seen = rollout.Track(rs.Servers, pods, servers.Name, serverset.ReplicasOf(servers), rs.Change, now)
	rollout.MarkStopping(rs.Servers, list)
	var judge []rollout.Seen
	for _, s := range seen {
		switch {
		case s.Empty != nil:
			log.FromContext(ctx).Info("server started empty", "pod", s.Server, "reason", s.Empty.Reason)
			later = append(later, func() {
				r.Recorder.Eventf(mc, s.Pod, corev1.EventTypeWarning, cachev1.WayStartedEmpty, "ObserveServers", "server %s started empty: %s", s.Server, s.Empty.Message)
				metrics.CountStartedEmpty(s.Empty.Reason)
			})
		case s.Judge:
			judge = append(judge, s)
		}
	}
	inFlight := rollout.InFlight(rs.Change)
	if !inFlight && serverset.PartitionOf(servers) > 0 {
		// A hold no change in flight needs: one whose change was recorded done, dropped or
		// rolled out by an operator stopped before it let go, or 1.3.0's. (A change being
		// recorded holds the servers only once it is in status: read first.)
		if err := r.SetPartition(ctx, servers, 0); err != nil {
			return rs, 0, announce, err
		}
	}
	if err := r.keepServing(ctx, servers, pods, rs); err != nil {
		return rs, 0, announce, err
	}
	requeue := time.Duration(0)
	for _, s := range judge {
		if done, f := r.judgeRestart(mc, rs, s); !done {
			requeue = servertalk.TenantRetry
		} else if f != nil {
			later = append(later, f)
		}
	}
	if !inFlight {
		if keep, mb := limitsToKeep(servers, pods); len(keep) > 0 && !r.keepLimits(mc, keep, mb) {
			requeue = servertalk.TenantRetry
		}
		return rs, requeue, announce, nil
	}
	again, err := r.drive(ctx, mc, servers, deployed, pods, rs, &later)
	if requeue == 0 || (again > 0 && again < requeue) {
		requeue = again
	}
	return rs, requeue, announce, err
}

// judgeRestart asks the memcached of a server that restarted in its pod, not by the operator's
// hand, with its memory file, whether it restored it (rollout.Restored), and records the answer,
// with what says so. done is false while it is being asked; a server not ready yet is asked once
// its readiness brings the cache back.
func (r *Reconciler) judgeRestart(mc *cachev1.Memcached, rs *cachev1.RolloutStatus, s rollout.Seen) (done bool, announce func()) {
	e := entryOf(rs, s.Server)
	if s.Next != nil {
		return r.judgeReplaced(mc, e, s)
	}
	if e == nil || !serverset.PodReady(s.Pod) || s.Pod.Status.PodIP == "" {
		return true, nil
	}
	restarts := rollout.RestartsOf(s.Pod, labels.ChartName)
	st, err, ok := r.readStats(mc, s.Pod, fmt.Sprintf("after restart %d", restarts))
	if !ok || err != nil {
		return false, nil
	}
	e.Restarts = restarts
	if why := rollout.Restored(s.Pod, st.Started()); why != "" {
		e.StartedEmpty = &cachev1.ServerEmptyStart{Reason: cachev1.EmptyRestarted, Message: why, Time: metav1.Now().Rfc3339Copy()}
		return true, func() {
			r.Recorder.Eventf(mc, s.Pod, corev1.EventTypeWarning, cachev1.WayStartedEmpty, "ObserveServers", "server %s started empty: %s", s.Server, why)
			metrics.CountStartedEmpty(cachev1.EmptyRestarted)
		}
	}
	return true, func() {
		r.Recorder.Eventf(mc, s.Pod, corev1.EventTypeNormal, cachev1.WayWarmRestart, "ObserveServers",
			"server %s's memcached was restarted in its pod by Kubernetes and restored %s", s.Server, texts.Count(st.CurrItems, "item", "items"))
	}
}

// drive takes the change in flight (rs.Change) one step further (see the top of this file); what
// it says of that step goes to later.
func (r *Reconciler) drive(ctx context.Context, mc *cachev1.Memcached, servers *appsv1.StatefulSet, deployed int32, pods map[int32]*corev1.Pod, rs *cachev1.RolloutStatus, later *[]func()) (time.Duration, error) {
	c, now := rs.Change, metav1.Now().Rfc3339Copy()
	if c.UpgradeFrom > 0 {
		// An upgrade recorded before Helm applied it: Helm applies it right after, so one not
		// applied within holdWait failed, and the change goes on without it (or, when nothing
		// was applied yet, never began).
		waited := age(c.UpgradeTime)
		switch {
		case deployed > c.UpgradeFrom:
			c.UpgradeFrom, c.UpgradeTime = 0, nil
		case waited < holdWait:
			c.Message = "waiting for the upgrade of the release that makes the change"
			return min(holdWait-waited, rolloutPoll), nil
		case c.ToRelease == 0 && c.Revision != "" && servers.Status.UpdateRevision != c.Revision:
			// The upgrade failed after it changed the StatefulSet's template: the servers roll
			// to it.
			return 0, r.letGo(ctx, mc, servers, rs, "the upgrade that made the change failed after it had changed the servers' template", later)
		case c.ToRelease == 0:
			log.FromContext(ctx).Info("the servers' change ended without one: its upgrade was not applied", "statefulSet", servers.Name)
			if err := r.SetPartition(ctx, servers, 0); err != nil {
				return 0, err
			}
			rs.Change = nil
			return 0, nil
		default:
			c.UpgradeFrom, c.UpgradeTime = 0, nil
		}
	}
	if serverset.PartitionOf(servers) == 0 {
		return 0, r.letGo(ctx, mc, servers, rs, "the rollout was no longer held (someone set its partition to 0)", later)
	}
	templates := map[int32]*corev1.PodTemplateSpec{}
	templateOf := func(rel int32) (*corev1.PodTemplateSpec, error) {
		if t, ok := templates[rel]; ok {
			return t, nil
		}
		t, err := r.templateOf(ctx, mc, rel)
		templates[rel] = t
		return t, err
	}
	to, err := templateOf(deployed)
	if err != nil {
		return 0, err
	}
	if to == nil {
		c.Message = fmt.Sprintf("waiting for the record of release revision %d", deployed)
		return rolloutPoll, nil // a record not decoded yet: its event brings us back
	}
	if deployed != c.ToRelease {
		// The upgrade is applied: the change is made to its release from every release the held
		// servers run, a second change folded in where every server can take it the same way.
		from, err := templateOf(c.FromRelease)
		if err != nil {
			return 0, err
		}
		way, memory, why, err := r.foldPlan(ctx, mc, servers, rs, to)
		if err != nil {
			return 0, err
		}
		if why != "" && c.ToRelease > 0 {
			why = "another change came while the servers were changed in place (" + why + ")"
		}
		if why != "" {
			return 0, r.letGo(ctx, mc, servers, rs, why, later)
		}
		if memory != nil && c.Memory != nil && c.Memory.Fits && c.Memory.ToMB == memory.ToMB {
			memory.Fits = true
		}
		c.ToRelease, c.Memory, c.Way = deployed, memory, cmpOr(way, cachev1.WayInPlace)
		if from != nil {
			if what := rollout.Plan(from, to).What(); what != "the server template" {
				c.What = what
			}
		}
	}
	held := min(c.Held, serverset.ReplicasOf(servers))
	after, _ := rollout.MemoryOf(&to.Spec)
	if c.Memory != nil && c.Memory.ToMB < c.Memory.FromMB && !rollout.WarmTemplate(to) && !c.Memory.Fits {
		// A shrink in place needs every server to hold no more than the new limit: asked here,
		// beside the servers reconciler's workers, not on Helm's before the upgrade.
		var ask []*corev1.Pod
		for n := range held {
			if e := entryOf(rs, serverset.Name(servers, n)); pods[n] != nil && (e == nil || e.Release != c.ToRelease) {
				ask = append(ask, pods[n].DeepCopy())
			}
		}
		why, ok := r.shrinkRefusal(mc, ask, after.MB)
		if !ok {
			c.Message = "asking the servers how much memory they hold"
			return servertalk.TenantRetry, nil
		}
		if why != "" {
			return 0, r.letGo(ctx, mc, servers, rs, why, later)
		}
		c.Memory.Fits = true
	}
	// The StatefulSet must show the release's template, and its controller must have seen it:
	// its update revision is then that template.
	if !showsTemplate(&servers.Spec.Template, to) || servers.Status.ObservedGeneration < servers.Generation || servers.Status.UpdateRevision == "" {
		c.Message = "waiting for the StatefulSet's controller to see the new template"
		return rolloutPoll, nil
	}
	t := serverTarget{change: c, to: to, after: after, update: servers.Status.UpdateRevision}
	// The held servers that still are (a smaller replicaCount removes the highest), the highest
	// first, as the StatefulSet rolls them: one at a time where memcached restarts, so that only
	// one server's share of the keys is away at any moment.
	oneAtATime := c.Way == cachev1.WayWarmRestart
	waiting, blocked := "", ""
	for n := held - 1; n >= 0; n-- {
		name := serverset.Name(servers, n)
		p, e := pods[n], entryOf(rs, name)
		if p == nil || e == nil || e.PodUID != p.UID {
			waiting = cmpOr(waiting, fmt.Sprintf("server %s's pod is being created", name))
			if oneAtATime {
				break // its keys are away already: no other server restarts meanwhile
			}
			continue
		}
		if e.Release == c.ToRelease && e.Restart == nil && p.Labels[appsv1.StatefulSetRevisionLabel] == t.update {
			continue
		}
		rel := e.Release
		if rel == 0 {
			rel = c.FromRelease
		}
		from, err := templateOf(rel)
		if err != nil {
			return 0, err
		}
		if from == nil {
			return 0, r.letGo(ctx, mc, servers, rs, fmt.Sprintf("the record of release revision %d that server %s runs cannot be read", rel, name), later)
		}
		step, err := r.updateServer(ctx, mc, rs, e, p, from, t)
		if err != nil {
			return 0, err
		}
		switch {
		case step.refusal != "":
			return 0, r.letGo(ctx, mc, servers, rs, step.refusal, later)
		case step.blocked != "":
			blocked = cmpOr(blocked, step.blocked)
		case step.done:
			c.ProgressTime = &now
			continue
		default:
			waiting = cmpOr(waiting, step.waiting)
		}
		if oneAtATime {
			break // the next server restarts once this one serves again
		}
	}
	if blocked != "" {
		// Refused by a policy of the namespace (a ResourceQuota, a LimitRange): a rollout would
		// be refused its new pods alike, and leave servers missing. The servers stay as they are,
		// held, until the policy or the spec changes; the step is tried again meanwhile.
		if c.Phase != cachev1.RolloutBlocked {
			what := c.What
			*later = append(*later, func() {
				r.Recorder.Eventf(mc, servers, corev1.EventTypeWarning, cachev1.ReasonResizeBlocked, "ResizeServers",
					"%s waits, the servers kept as they are: %s", what, blocked)
			})
		}
		c.Phase, c.Message = cachev1.RolloutBlocked, blocked
		return blockedRetry, nil
	}
	c.Phase = cachev1.RolloutChanging
	if waiting != "" {
		c.Message = waiting
		return rolloutPoll, nil
	}
	return 0, r.complete(ctx, mc, servers, rs, held)
}

// complete records the change in flight done, every held server changed in its pod, then lets go
// of the StatefulSet's rollout, which has nothing left to replace.
func (r *Reconciler) complete(ctx context.Context, mc *cachev1.Memcached, servers *appsv1.StatefulSet, rs *cachev1.RolloutStatus, held int32) error {
	c, now := rs.Change, metav1.Now().Rfc3339Copy()
	c.Phase, c.Message, c.CompletionTime = cachev1.RolloutComplete, "", &now
	for i := range rs.Servers {
		rs.Servers[i].Release = 0
	}
	if err := r.writeRollout(ctx, mc, rs); err != nil {
		return err
	}
	if err := r.SetPartition(ctx, servers, 0); err != nil {
		return err
	}
	warm := held - emptyCount(rs.Servers, c)
	switch {
	case c.Way == cachev1.WayWarmRestart:
		r.Recorder.Eventf(mc, servers, corev1.EventTypeNormal, cachev1.WayWarmRestart, "ChangeServers",
			"%s: %s restarted one at a time in their pods, %d with their items", c.What, texts.Count(held, "server", "servers"), warm)
	case c.Memory != nil:
		r.Recorder.Eventf(mc, servers, corev1.EventTypeNormal, cachev1.ReasonResizedInPlace, "ResizeServers",
			"%s: %s resized in place, none restarted", c.What, texts.Count(held, "server", "servers"))
		metrics.CountResize("in_place")
	default:
		r.Recorder.Eventf(mc, servers, corev1.EventTypeNormal, cachev1.WayInPlace, "ChangeServers",
			"%s: written onto %s in place, none restarted", c.What, texts.Count(held, "server", "servers"))
	}
	metrics.CountChange(c.Way)
	return nil
}

// letGo hands the change in flight to the StatefulSet's rollout, each server not yet changed
// starting empty, for the reason why: recorded first, and said (with what later held, which the
// record holds too), then the hold let go.
func (r *Reconciler) letGo(ctx context.Context, mc *cachev1.Memcached, servers *appsv1.StatefulSet, rs *cachev1.RolloutStatus, why string, later *[]func()) error {
	announce := r.rollOut(mc, servers, rs, why)
	if err := r.writeRollout(ctx, mc, rs); err != nil {
		return err
	}
	// Written: what it says is said now, whatever comes of letting go (a conflict on the
	// StatefulSet is read again, and finds the change rolled out: nothing left to announce).
	for _, f := range append(*later, announce) {
		f()
	}
	*later = nil
	return r.SetPartition(ctx, servers, 0)
}

// entryOf is status.rollout's entry of a server, or nil.
func entryOf(rs *cachev1.RolloutStatus, server string) *cachev1.ServerRollout {
	for i := range rs.Servers {
		if rs.Servers[i].Name == server {
			return &rs.Servers[i]
		}
	}
	return nil
}

// cmpOr is a, or b when a is "".
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// age is how long ago t was; nil, or a time to come, counts as long ago.
func age(t *metav1.Time) time.Duration {
	if t == nil {
		return 24 * time.Hour
	}
	if d := time.Since(t.Time); d >= 0 {
		return d
	}
	return 24 * time.Hour
}

// showsTemplate says whether the StatefulSet's template live is the release's template want in
// what a change in place changes (the API server fills in defaults the manifest leaves out).
func showsTemplate(live, want *corev1.PodTemplateSpec) bool {
	l, ok1 := rollout.MemoryOf(&live.Spec)
	w, ok2 := rollout.MemoryOf(&want.Spec)
	if !ok1 || !ok2 || l.MB != w.MB || !equality.Semantic.DeepEqual(l.Resources, w.Resources) {
		return false
	}
	for _, c := range want.Spec.Containers {
		if have := rollout.ContainerNamed(&live.Spec, c.Name); have == nil || have.Image != c.Image {
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
