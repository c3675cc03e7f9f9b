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
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/memcachedstatus"
)

// What status says of the servers' changes is rendered from status.rollout alone: in flight,
// stalled, blocked, done in place, handed to the rollout, and a server that started empty since.
func TestObserveRollout(t *testing.T) {
	now := time.Now()
	since := metav1.NewTime(now.Add(-time.Minute))
	done := metav1.NewTime(now.Add(-30 * time.Second))
	later := metav1.NewTime(now.Add(-10 * time.Second))
	servers := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "c-memcached", Generation: 2}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3, CurrentRevision: "r2", UpdateRevision: "r2"}}
	rollingOut := servers.DeepCopy()
	rollingOut.Status.UpdatedReplicas, rollingOut.Status.CurrentRevision = 1, "r1"
	notApplied := servers.DeepCopy()
	notApplied.Status.CurrentRevision, notApplied.Status.UpdateRevision = "r1", "r1"
	during := metav1.NewTime(now.Add(-45 * time.Second))
	entriesAt := func(release int32, at metav1.Time, empty ...string) []cachev1.ServerRollout {
		out := []cachev1.ServerRollout{{Name: "c-memcached-0", PodUID: "a", Release: 3}, {Name: "c-memcached-1", PodUID: "b", Release: release}, {Name: "c-memcached-2", PodUID: "c", Release: release}}
		for _, name := range empty {
			for i := range out {
				if out[i].Name == name {
					out[i].StartedEmpty = &cachev1.ServerEmptyStart{Reason: cachev1.EmptyPodReplaced, Message: "its pod was replaced", Time: at}
				}
			}
		}
		return out
	}
	entries := func(release int32, empty ...string) []cachev1.ServerRollout {
		return entriesAt(release, later, empty...)
	}
	change := func(phase, way string, edits ...func(*cachev1.ServersChange)) *cachev1.ServersChange {
		c := &cachev1.ServersChange{What: "memcached 1.6.38 → 1.6.39", Way: way, Phase: phase, FromRelease: 3, ToRelease: 4, Revision: "r1", Held: 3, Since: since}
		if phase == cachev1.RolloutComplete || phase == cachev1.RolloutRolledOut {
			c.CompletionTime = &done
		}
		for _, e := range edits {
			e(c)
		}
		return c
	}
	memory := func(c *cachev1.ServersChange) {
		c.What, c.Memory = "item memory 64 → 128 MiB", &cachev1.MemoryChange{FromMB: 64, ToMB: 128}
	}
	stalled := func(c *cachev1.ServersChange) {
		c.ProgressTime, c.Message = ptr.To(metav1.NewTime(now.Add(-5*time.Minute))), "the kubelet has not resized server c-memcached-0 yet"
	}
	type want struct{ status, reason, message string }
	for _, tc := range []struct {
		name                             string
		servers                          *appsv1.StatefulSet
		rollout                          cachev1.RolloutStatus
		progressing, cacheWarm, resizing *want
	}{
		{name: "in place, 2 of 3 done", servers: servers, rollout: cachev1.RolloutStatus{Change: change(cachev1.RolloutChanging, cachev1.WayInPlace), Servers: entries(4)},
			progressing: &want{"True", cachev1.WayInPlace, "writing onto the servers in place, none restarted: 2 of 3 done"},
			cacheWarm:   &want{"True", cachev1.WayInPlace, "2 of 3 done"}},
		{name: "restarting warm, a server's pod replaced mid-way", servers: servers, rollout: cachev1.RolloutStatus{Change: change(cachev1.RolloutChanging, cachev1.WayWarmRestart), Servers: entries(4, "c-memcached-2")},
			progressing: &want{"True", cachev1.WayWarmRestart, "restarting the servers in their pods one at a time, each with its items: 2 of 3 done"},
			cacheWarm:   &want{"False", cachev1.WayStartedEmpty, "server c-memcached-2 started empty: its pod was replaced"}},
		{name: "memory in place", servers: servers, rollout: cachev1.RolloutStatus{Change: change(cachev1.RolloutChanging, cachev1.WayInPlace, memory), Servers: entries(3)},
			progressing: &want{"True", cachev1.ReasonResizingInPlace, "item memory 64 → 128 MiB in place, without a restart: 0 of 3 servers resized"},
			resizing:    &want{"True", cachev1.ReasonResizingInPlace, "0 of 3 servers resized"}, cacheWarm: &want{"True", cachev1.WayInPlace, "0 of 3 servers resized"}},
		{name: "memory in place, stalled: said, not given up", servers: servers, rollout: cachev1.RolloutStatus{Change: change(cachev1.RolloutChanging, cachev1.WayInPlace, memory, stalled), Servers: entries(3)},
			progressing: &want{"False", cachev1.ReasonServersStalled, "the kubelet has not resized server c-memcached-0 yet"},
			resizing:    &want{"True", cachev1.ReasonResizingInPlace, "0 of 3 servers resized"}, cacheWarm: &want{"True", cachev1.WayInPlace, "0 of 3 servers resized"}},
		{name: "memory blocked by the namespace's quota", servers: servers, rollout: cachev1.RolloutStatus{Change: change(cachev1.RolloutBlocked, cachev1.WayInPlace, memory, func(c *cachev1.ServersChange) { c.Message = "exceeded quota" }), Servers: entries(3)},
			progressing: &want{"False", cachev1.ReasonResizeBlocked, "exceeded quota"}, resizing: &want{"True", cachev1.ReasonResizeBlocked, "exceeded quota"},
			cacheWarm: &want{"True", cachev1.WayInPlace, "exceeded quota"}},
		{name: "done in place", servers: servers, rollout: cachev1.RolloutStatus{Change: change(cachev1.RolloutComplete, cachev1.WayInPlace), Servers: entries(0)},
			cacheWarm: &want{"True", cachev1.WayInPlace, "made in place at " + timeOf(&done)}},
		{name: "restarted warm, one server replaced on the way", servers: servers, rollout: cachev1.RolloutStatus{Change: change(cachev1.RolloutComplete, cachev1.WayWarmRestart), Servers: entriesAt(0, during, "c-memcached-1")},
			cacheWarm: &want{"False", cachev1.WayStartedEmpty, "2 with their items; server c-memcached-1 started empty: its pod was replaced"}},
		{name: "restarted warm, every server with its items", servers: servers, rollout: cachev1.RolloutStatus{Change: change(cachev1.RolloutComplete, cachev1.WayWarmRestart, func(c *cachev1.ServersChange) { c.CompletionTime = &later }), Servers: entries(0)},
			cacheWarm: &want{"True", cachev1.WayWarmRestart, "every server restarted in its pod with its items"}},
		{name: "handed to the rollout, not applied: nothing claimed", servers: notApplied, rollout: cachev1.RolloutStatus{Change: change(cachev1.RolloutRolledOut, cachev1.WayStartedEmpty)}},
		{name: "handed to the rollout, rolling", servers: rollingOut, rollout: cachev1.RolloutStatus{Change: change(cachev1.RolloutRolledOut, cachev1.WayStartedEmpty, func(c *cachev1.ServersChange) { c.Message = "memcached's flags change" })},
			cacheWarm: &want{"False", cachev1.WayStartedEmpty, "rolling out one server at a time, each starts empty, because memcached's flags change"}},
		{name: "a server replaced after the last change", servers: servers, rollout: cachev1.RolloutStatus{Change: change(cachev1.RolloutComplete, cachev1.WayInPlace), Servers: entries(0, "c-memcached-2")},
			cacheWarm: &want{"False", cachev1.WayStartedEmpty, "server c-memcached-2 started empty at " + timeOf(&later) + ": its pod was replaced"}},
		{name: "a server replaced, no change ever", servers: servers, rollout: cachev1.RolloutStatus{Servers: entries(0, "c-memcached-0")},
			cacheWarm: &want{"False", cachev1.WayStartedEmpty, "server c-memcached-0 started empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &cachev1.MemcachedStatus{Rollout: tc.rollout.DeepCopy()}
			observeRollout(st, tc.servers, now)
			for _, c := range []struct {
				typ  string
				want *want
			}{{cachev1.ConditionProgressing, tc.progressing}, {cachev1.ConditionCacheWarm, tc.cacheWarm}, {cachev1.ConditionResizing, tc.resizing}} {
				got := memcachedstatus.Condition(*st, c.typ)
				if c.want == nil {
					if got.Type != "" {
						t.Errorf("%s = %s/%s %q, want none", c.typ, got.Status, got.Reason, got.Message)
					}
					continue
				}
				if string(got.Status) != c.want.status || got.Reason != c.want.reason || !strings.Contains(got.Message, c.want.message) {
					t.Errorf("%s = %s/%s %q, want %s/%s with %q", c.typ, got.Status, got.Reason, got.Message, c.want.status, c.want.reason, c.want.message)
				}
			}
		})
	}
}
