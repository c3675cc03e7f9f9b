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

package rollout

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// What Track makes of each server's pod: a server is known by its pod's UID, so a pod replaced
// is that server's empty start (and, mid-change, a server to take to the change again from the
// template before), never a wait for a restart that will not come.
func TestTrack(t *testing.T) {
	now := metav1.Now()
	earlier := metav1.NewTime(now.Add(-time.Hour))
	pod := func(uid string, restarts int32, ready bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), CreationTimestamp: now}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "memcached"}}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "memcached", RestartCount: restarts,
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 139}}}}}}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		return p
	}
	entry := func(uid string, restarts int32) cachev1.ServerRollout {
		return cachev1.ServerRollout{Name: "c-memcached-0", PodUID: types.UID(uid), Restarts: restarts}
	}
	changing := &cachev1.ServersChange{Phase: cachev1.RolloutChanging, FromRelease: 3, ToRelease: 4, What: "memcached 1.6.38 → 1.6.39", Since: earlier}
	rolledOut := &cachev1.ServersChange{Phase: cachev1.RolloutRolledOut, What: "memcached's flags", Message: "memcached's flags change", Since: earlier, CompletionTime: &earlier}
	restarting := entry("a", 2)
	stopped := entry("a", 1)
	rolledOutPod := entry("b", 0)
	rolledOutPod.StartedEmpty = &cachev1.ServerEmptyStart{Reason: cachev1.EmptyRolledOut, Time: now}
	stopped.StopTime = &earlier
	copying := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Volumes = []corev1.Volume{{Name: MemoryCopyVolume, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "memory-copy-c-memcached-0"}}}}
		return p
	}
	restarting.Restart = &cachev1.ServerRestart{Items: 100, Time: earlier}
	for _, tc := range []struct {
		name    string
		prev    []cachev1.ServerRollout
		pod     *corev1.Pod
		warm    bool
		change  *cachev1.ServersChange
		want    *cachev1.ServerRollout // nil: no entry
		empty   string                 // the reason of an empty start seen, or ""
		judge   bool
		message string // a part of the empty start's message
	}{
		{name: "a new server, serving: known from now on", pod: pod("a", 0, true), want: &cachev1.ServerRollout{Name: "c-memcached-0", PodUID: "a"}},
		{name: "a new server not serving yet: not known yet", pod: pod("a", 0, false)},
		{name: "the same pod", prev: []cachev1.ServerRollout{entry("a", 1)}, pod: pod("a", 1, true), want: &cachev1.ServerRollout{Name: "c-memcached-0", PodUID: "a", Restarts: 1}},
		{name: "its pod replaced", prev: []cachev1.ServerRollout{entry("a", 1)}, pod: pod("b", 0, false),
			want: &cachev1.ServerRollout{Name: "c-memcached-0", PodUID: "b"}, empty: cachev1.EmptyPodReplaced, message: "its pod was replaced"},
		{name: "its pod replaced mid-change: back to the template before", prev: []cachev1.ServerRollout{restarting}, pod: pod("b", 0, true), change: changing,
			want: &cachev1.ServerRollout{Name: "c-memcached-0", PodUID: "b", Release: 3}, empty: cachev1.EmptyPodReplaced, message: "its pod was replaced"},
		{name: "its pod replaced by the rollout the change was handed to", prev: []cachev1.ServerRollout{entry("a", 0)}, pod: pod("b", 0, true), change: rolledOut,
			want: &cachev1.ServerRollout{Name: "c-memcached-0", PodUID: "b"}, empty: cachev1.EmptyRolledOut, message: "replaced by the rollout of memcached's flags, because memcached's flags change"},
		{name: "its pod, which the rollout made, replaced again: not the rollout's doing", prev: []cachev1.ServerRollout{rolledOutPod}, pod: pod("c", 0, true), change: rolledOut,
			want: &cachev1.ServerRollout{Name: "c-memcached-0", PodUID: "c"}, empty: cachev1.EmptyPodReplaced, message: "its pod was replaced (a node drained"},
		{name: "restarted by the operator: its step judges it", prev: []cachev1.ServerRollout{restarting}, pod: pod("a", 3, true), warm: true, change: changing, want: &restarting},
		{name: "restarted by Kubernetes, warm: memcached is asked", prev: []cachev1.ServerRollout{entry("a", 1)}, pod: pod("a", 2, true), warm: true,
			want: &cachev1.ServerRollout{Name: "c-memcached-0", PodUID: "a", Restarts: 1}, judge: true},
		{name: "restarted without its memory file: empty", prev: []cachev1.ServerRollout{entry("a", 1)}, pod: pod("a", 2, true),
			want: &cachev1.ServerRollout{Name: "c-memcached-0", PodUID: "a", Restarts: 2}, empty: cachev1.EmptyRestarted, message: "memcached stopped (Error, exit code 139) and restarted, and without its memory file"},
		{name: "its pod replaced by one that keeps a copy (persistence): memcached is asked once it serves; the entry stays the old pod's", prev: []cachev1.ServerRollout{stopped},
			pod: copying(pod("b", 0, true)), want: &stopped, judge: true},
		{name: "its pod not there a moment: compared once it is back", prev: []cachev1.ServerRollout{entry("a", 1)}, want: &cachev1.ServerRollout{Name: "c-memcached-0", PodUID: "a", Restarts: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := map[int32]*corev1.Pod{}
			if tc.pod != nil {
				pods[0] = tc.pod
			}
			if tc.pod != nil && tc.warm {
				tc.pod.Spec.Containers[0].Args = []string{"-m", "64", MemoryFileArg, "/var/cache/memcached/items"}
			}
			got, seen := Track(tc.prev, pods, "c-memcached", 1, tc.change, now)
			if tc.want == nil {
				if len(got) != 0 {
					t.Errorf("entries = %+v, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("entries = %+v, want one", got)
			}
			e := got[0]
			if e.Name != tc.want.Name || e.PodUID != tc.want.PodUID || e.Restarts != tc.want.Restarts || e.Release != tc.want.Release || (e.Restart == nil) != (tc.want.Restart == nil) {
				t.Errorf("entry = %+v, want %+v", e, *tc.want)
			}
			var empty string
			judge := false
			for _, s := range seen {
				if s.Empty != nil {
					empty = s.Empty.Reason
					if !strings.Contains(s.Empty.Message, tc.message) || e.StartedEmpty == nil || e.StartedEmpty.Reason != s.Empty.Reason {
						t.Errorf("empty start %+v (entry %+v), want one saying %q", s.Empty, e.StartedEmpty, tc.message)
					}
				}
				judge = judge || s.Judge
				if n := s.Next; n != nil && (n.PodUID != tc.pod.UID || n.StartedEmpty == nil || n.StartedEmpty.Reason != cachev1.EmptyPodReplaced ||
					!strings.Contains(n.StartedEmpty.Message, "did not restore the copy") || !n.StopTime.Equal(tc.prev[0].StopTime)) {
					t.Errorf("the entry once judged = %+v, want the new pod's, empty unless it restored, with the old pod's stop", n)
				}
			}
			if empty != tc.empty || judge != tc.judge {
				t.Errorf("seen %+v: empty %q judge %v, want empty %q judge %v", seen, empty, judge, tc.empty, tc.judge)
			}
		})
	}

	t.Run("a server the StatefulSet no longer has is forgotten", func(t *testing.T) {
		prev := []cachev1.ServerRollout{entry("a", 0), {Name: "c-memcached-1", PodUID: "b"}}
		got, _ := Track(prev, map[int32]*corev1.Pod{0: pod("a", 0, true)}, "c-memcached", 1, nil, now)
		if len(got) != 1 || got[0].Name != "c-memcached-0" {
			t.Errorf("entries = %+v, want server 0 alone", got)
		}
	})
}

// A server's pod that keeps a copy of its memory file and is being deleted: its stop is the
// deletion's start (the deletion timestamp less the grace period), recorded once; and how long the
// server was away is counted to its new memcached's start.
func TestMarkStoppingAndAwaySeconds(t *testing.T) {
	deadline := metav1.NewTime(time.Date(2026, 12, 4, 12, 0, 30, 0, time.UTC))
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "a", DeletionTimestamp: &deadline, DeletionGracePeriodSeconds: ptrTo(int64(30))},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: MemoryCopyVolume, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "memory-copy-c-memcached-0"}}}}}}
	other := *p.DeepCopy()
	other.UID, other.Spec.Volumes = "b", nil
	entries := []cachev1.ServerRollout{{Name: "c-memcached-0", PodUID: "a"}, {Name: "c-memcached-1", PodUID: "b"}}
	MarkStopping(entries, []corev1.Pod{p, other})
	want := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	if entries[0].StopTime == nil || !entries[0].StopTime.Time.Equal(want) {
		t.Errorf("stop = %v, want %v", entries[0].StopTime, want)
	}
	if entries[1].StopTime != nil {
		t.Errorf("a pod without a copy recorded a stop: %v", entries[1].StopTime)
	}
	later := p.DeepCopy()
	later.DeletionTimestamp = &metav1.Time{Time: deadline.Add(time.Hour)}
	MarkStopping(entries, []corev1.Pod{*later})
	if !entries[0].StopTime.Time.Equal(want) {
		t.Errorf("stop moved to %v: the first is kept", entries[0].StopTime)
	}

	next := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "memcached",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(want.Add(7 * time.Second))}}}}}}
	if got := AwaySeconds(next, entries[0].StopTime); got == nil || *got != 7 {
		t.Errorf("away = %v, want 7 s", got)
	}
	if got := AwaySeconds(next, nil); got != nil {
		t.Errorf("away = %v with no stop seen, want unknown", *got)
	}
}

func ptrTo[T any](v T) *T { return &v }

// A memcached that restored its memory file goes on with the clock of the process that saved it:
// it says it started before its container did. One that started empty started with it.
func TestRestored(t *testing.T) {
	started := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	p := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "memcached",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}}}}
	for _, tc := range []struct {
		name         string
		processStart time.Time
		restored     bool
	}{
		{"its process began an hour before its container: restored", started.Add(-time.Hour), true},
		{"10 s before: restored", started.Add(-10 * time.Second), true},
		{"with its container: empty", started, false},
		{"a second after: empty", started.Add(time.Second), false},
		{"three seconds before (memcached's clock starts two seconds early, to the second): empty", started.Add(-3 * time.Second), false},
	} {
		if got := Restored(p, tc.processStart) == ""; got != tc.restored {
			t.Errorf("%s: restored = %v, want %v", tc.name, got, tc.restored)
		}
	}
	if Restored(&corev1.Pod{}, started) == "" {
		t.Error("a memcached not running restored its items")
	}
}
