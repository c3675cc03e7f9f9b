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
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/memcachedstatus"
	"github.com/example/memcached-operator/controllers/internal/progress"
	"github.com/example/memcached-operator/controllers/internal/serverset"
	"github.com/example/memcached-operator/controllers/internal/texts"
	"github.com/example/memcached-operator/internal/labels"
	"github.com/example/memcached-operator/internal/rollout"
)

// What status says of the servers' changes, rendered from status.rollout alone (the plan that
// rollout.go drives): Progressing while a change is made in place, Resizing for a change
// of memory (as since 1.2.0), and CacheWarm, whether the servers kept their items through the last
// change and since (from 1.3.0). The servers reconciler is their only writer.

// stallAfter is how long a change in place goes without a server done before Progressing says it
// has stalled, and what it waits for. It is a report, not a deadline: the change goes on.
const stallAfter = 3 * time.Minute

// observeRollout renders status.rollout into the conditions of the servers' changes (after
// observeOperand, whose Progressing it replaces while a change is made in place).
func observeRollout(st *cachev1.MemcachedStatus, servers *appsv1.StatefulSet, now time.Time) {
	if servers == nil || st.Rollout == nil {
		return
	}
	c := st.Rollout.Change
	if c != nil {
		observeChange(st, servers, c, now)
	}
	if (c == nil || c.Memory == nil) && memcachedstatus.Condition(*st, cachev1.ConditionResizing).Status == metav1.ConditionTrue {
		// A memory change that was dropped (its upgrade failed) or taken back by a second change.
		memcachedstatus.SetCondition(st, cachev1.ConditionResizing, metav1.ConditionFalse, cachev1.ReasonNotResizing, "no change of the servers' memory is in flight")
	}
	// A server that started empty after the last change (or mid-way through one) says so last.
	var since *metav1.Time
	if c != nil {
		since = ptrTime(c.Since)
		if c.CompletionTime != nil {
			since = c.CompletionTime
		}
	}
	if c != nil && rollout.InFlight(c) {
		return
	}
	// So does a server whose new pod restored its items from its volume (persistence).
	e, r := latestEmpty(st.Rollout.Servers, since), latestRestored(st.Rollout.Servers, since)
	switch {
	case r != nil && (e == nil || e.StartedEmpty.Time.Before(&r.Restored.Time)):
		memcachedstatus.SetCondition(st, cachev1.ConditionCacheWarm, metav1.ConditionTrue, cachev1.CacheRestored,
			fmt.Sprintf("%s (at %s)", restoredMessage(r.Name, r.Restored), timeOf(&r.Restored.Time)))
	case e != nil:
		memcachedstatus.SetCondition(st, cachev1.ConditionCacheWarm, metav1.ConditionFalse, cachev1.WayStartedEmpty,
			fmt.Sprintf("server %s started empty at %s: %s", e.Name, timeOf(&e.StartedEmpty.Time), e.StartedEmpty.Message))
	}
}

// latestRestored is the server whose new pod restored its items from its volume last, after
// since (nil: any time), or nil.
func latestRestored(entries []cachev1.ServerRollout, since *metav1.Time) *cachev1.ServerRollout {
	var last *cachev1.ServerRollout
	for i := range entries {
		e := &entries[i]
		if e.Restored == nil || (since != nil && e.Restored.Time.Before(since)) {
			continue
		}
		if last == nil || last.Restored.Time.Before(&e.Restored.Time) {
			last = e
		}
	}
	return last
}

func ptrTime(t metav1.Time) *metav1.Time { return &t }

// latestEmpty is the server that started empty last, after since (nil: any time), other than by
// a rollout (whose change says so), or nil.
func latestEmpty(entries []cachev1.ServerRollout, since *metav1.Time) *cachev1.ServerRollout {
	var last *cachev1.ServerRollout
	for i := range entries {
		e := &entries[i]
		if s := e.StartedEmpty; s == nil || s.Reason == cachev1.EmptyRolledOut || (since != nil && s.Time.Before(since)) {
			continue
		}
		if last == nil || last.StartedEmpty.Time.Before(&e.StartedEmpty.Time) {
			last = e
		}
	}
	return last
}

// observeChange renders a change: in flight, done in place, or handed to the rollout.
func observeChange(st *cachev1.MemcachedStatus, servers *appsv1.StatefulSet, c *cachev1.ServersChange, now time.Time) {
	if c.Phase == cachev1.RolloutRolledOut && servers.Status.UpdateRevision == c.Revision && c.Revision != "" {
		// Decided before Helm applies the change: while the StatefulSet's template is still the
		// one the servers ran then, nothing was rolled out (the upgrade failed, or the
		// StatefulSet controller has not seen it yet), and no server started empty.
		return
	}
	held := min(c.Held, serverset.ReplicasOf(servers))
	done := int32(0)
	for _, e := range st.Rollout.Servers {
		if n, ok := serverset.OrdinalOf(servers.Name, e.Name); ok && n < held && c.ToRelease > 0 && e.Release == c.ToRelease {
			done++
		}
	}
	empties := emptiesOf(st.Rollout.Servers, c)
	switch c.Phase {
	case cachev1.RolloutChanging, cachev1.RolloutBlocked:
		how := fmt.Sprintf("%s: writing onto the servers in place, none restarted: %d of %d done", c.What, done, held)
		if c.Way == cachev1.WayWarmRestart {
			how = fmt.Sprintf("%s: restarting the servers in their pods one at a time, each with its items: %d of %d done", c.What, done, held)
		}
		if c.Memory != nil {
			resizing := fmt.Sprintf("%s in place, without a restart: %s resized", rollout.MemoryWhat(c.Memory), texts.CountOf(done, held, "server", "servers"))
			if c.Phase == cachev1.RolloutBlocked {
				resizing = fmt.Sprintf("%s waits, the servers kept as they are (a rollout would be refused its new pods alike): %s", rollout.MemoryWhat(c.Memory), c.Message)
				memcachedstatus.SetCondition(st, cachev1.ConditionResizing, metav1.ConditionTrue, cachev1.ReasonResizeBlocked, resizing)
			} else {
				memcachedstatus.SetCondition(st, cachev1.ConditionResizing, metav1.ConditionTrue, cachev1.ReasonResizingInPlace, resizing)
			}
			if c.Way != cachev1.WayWarmRestart {
				how = resizing
			}
		}
		last := c.Since.Time
		if c.ProgressTime != nil {
			last = c.ProgressTime.Time
		}
		switch {
		case c.Phase == cachev1.RolloutBlocked && c.Memory != nil:
			memcachedstatus.SetCondition(st, cachev1.ConditionProgressing, metav1.ConditionFalse, cachev1.ReasonResizeBlocked, memcachedstatus.Condition(*st, cachev1.ConditionResizing).Message)
		case c.Phase == cachev1.RolloutBlocked:
			memcachedstatus.SetCondition(st, cachev1.ConditionProgressing, metav1.ConditionFalse, cachev1.ReasonResizeBlocked, fmt.Sprintf("%s waits, the servers kept as they are: %s", c.What, c.Message))
		case now.Sub(last) > stallAfter && c.Message != "":
			memcachedstatus.SetCondition(st, cachev1.ConditionProgressing, metav1.ConditionFalse, cachev1.ReasonServersStalled,
				fmt.Sprintf("%s; no server done since %s: %s", how, timeOf(&metav1.Time{Time: last}), c.Message))
		case c.Memory != nil && c.Way != cachev1.WayWarmRestart:
			memcachedstatus.SetCondition(st, cachev1.ConditionProgressing, metav1.ConditionTrue, cachev1.ReasonResizingInPlace, how)
		default:
			memcachedstatus.SetCondition(st, cachev1.ConditionProgressing, metav1.ConditionTrue, c.Way, how)
		}
		if empties != "" {
			memcachedstatus.SetCondition(st, cachev1.ConditionCacheWarm, metav1.ConditionFalse, cachev1.WayStartedEmpty, how+"; "+empties)
		} else {
			memcachedstatus.SetCondition(st, cachev1.ConditionCacheWarm, metav1.ConditionTrue, c.Way, how)
		}
	case cachev1.RolloutComplete:
		if c.Memory != nil {
			memcachedstatus.SetCondition(st, cachev1.ConditionResizing, metav1.ConditionFalse, cachev1.ReasonResizedInPlace,
				fmt.Sprintf("%s: made in place at %s, no server restarted", rollout.MemoryWhat(c.Memory), timeOf(c.CompletionTime)))
		}
		switch {
		case empties != "":
			memcachedstatus.SetCondition(st, cachev1.ConditionCacheWarm, metav1.ConditionFalse, cachev1.WayStartedEmpty,
				fmt.Sprintf("%s: the servers changed in their pods by %s, %d with their items; %s", c.What, timeOf(c.CompletionTime), held-emptyCount(st.Rollout.Servers, c), empties))
		case c.Way == cachev1.WayWarmRestart:
			memcachedstatus.SetCondition(st, cachev1.ConditionCacheWarm, metav1.ConditionTrue, cachev1.WayWarmRestart,
				fmt.Sprintf("%s: every server restarted in its pod with its items, one at a time, by %s", c.What, timeOf(c.CompletionTime)))
		default:
			memcachedstatus.SetCondition(st, cachev1.ConditionCacheWarm, metav1.ConditionTrue, cachev1.WayInPlace,
				fmt.Sprintf("%s: made in place at %s, no server restarted", c.What, timeOf(c.CompletionTime)))
		}
	case cachev1.RolloutRolledOut:
		rolledOut := progress.OfStatefulSet(servers).Complete()
		if rolledOut {
			memcachedstatus.SetCondition(st, cachev1.ConditionCacheWarm, metav1.ConditionFalse, cachev1.WayStartedEmpty,
				fmt.Sprintf("%s: rolled out one server at a time, each started empty, because %s", c.What, c.Message))
		} else {
			memcachedstatus.SetCondition(st, cachev1.ConditionCacheWarm, metav1.ConditionFalse, cachev1.WayStartedEmpty,
				fmt.Sprintf("%s: rolling out one server at a time, each starts empty, because %s", c.What, c.Message))
		}
		if c.Memory != nil {
			if rolledOut {
				memcachedstatus.SetCondition(st, cachev1.ConditionResizing, metav1.ConditionFalse, cachev1.ReasonRolledOut,
					fmt.Sprintf("%s: rolled out one server at a time, each started empty, because %s", rollout.MemoryWhat(c.Memory), c.Message))
			} else {
				memcachedstatus.SetCondition(st, cachev1.ConditionResizing, metav1.ConditionTrue, cachev1.ReasonRollingOut,
					fmt.Sprintf("%s: rolling out one server at a time, each starts empty, because %s", rollout.MemoryWhat(c.Memory), c.Message))
			}
		}
	}
}

// emptiesOf says which servers started empty since change c began, and why, in words ("" for
// none).
func emptiesOf(entries []cachev1.ServerRollout, c *cachev1.ServersChange) string {
	why := map[string]string{}
	for _, e := range entries {
		if s := e.StartedEmpty; s != nil && !s.Time.Before(&c.Since) && s.Reason != cachev1.EmptyRolledOut {
			why[e.Name] = s.Message
		}
	}
	var which []string
	for _, server := range slices.Sorted(maps.Keys(why)) {
		which = append(which, fmt.Sprintf("server %s started empty: %s", server, why[server]))
	}
	return strings.Join(which, "; ")
}

func emptyCount(entries []cachev1.ServerRollout, c *cachev1.ServersChange) int32 {
	n := int32(0)
	for _, e := range entries {
		if s := e.StartedEmpty; s != nil && !s.Time.Before(&c.Since) && s.Reason != cachev1.EmptyRolledOut {
			n++
		}
	}
	return n
}

func timeOf(t *metav1.Time) string {
	if t == nil {
		return "an unknown time"
	}
	return t.UTC().Format(time.RFC3339)
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
