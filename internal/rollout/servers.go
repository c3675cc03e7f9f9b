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
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/labels"
)

// What happened to each server since the operator last saw it, from its pod alone: another UID
// is another pod, which started empty; a higher restart count of memcached's container is a
// restart in the pod, empty without the memory file, and to be asked with it (Restored).

// Seen is what Track found happened to one server.
type Seen struct {
	Server string
	Pod    *corev1.Pod
	// Empty says the server started empty, and why.
	Empty *cachev1.ServerEmptyStart
	// Judge: memcached restarted in its pod, with its memory file, and not by the operator's
	// hand: whether it restored its items is for memcached to say (Restored). Its entry keeps the
	// restarts it had until it is judged.
	Judge bool
	// Next is, for a server whose pod was replaced by one that may restore the copy of its memory
	// file (persistence), its entry once judged (Judge is set too), as if it started empty: its
	// entry keeps the old pod's until then.
	Next *cachev1.ServerRollout
}

// Track brings the servers' entries (status.rollout.servers) up to date with their pods (by
// ordinal; a missing one is being created), for a StatefulSet of that name and replicas; change is
// the change in flight or the last. Whether a server's memcached has a memory file to restore is
// read from its own pod (in a rollout that adds or removes the file, its pods differ). It returns
// the new entries, in the order of the ordinals, and what it found.
func Track(prev []cachev1.ServerRollout, pods map[int32]*corev1.Pod, name string, replicas int32, change *cachev1.ServersChange, now metav1.Time) ([]cachev1.ServerRollout, []Seen) {
	var out []cachev1.ServerRollout
	var seen []Seen
	for i := range replicas {
		server := fmt.Sprintf("%s-%d", name, i)
		at := slices.IndexFunc(prev, func(e cachev1.ServerRollout) bool { return e.Name == server })
		p := pods[i]
		switch {
		case p == nil && at < 0:
			continue // a server not made yet: seen once it is
		case p == nil:
			out = append(out, *prev[at].DeepCopy()) // compared with its pod once it is back
			continue
		}
		restarts := RestartsOf(p, labels.ChartName)
		if at < 0 {
			// A server not seen before: a new one (the first install, a server added), or one of
			// a cache an earlier operator made. Kept once it serves: a pod replaced before it
			// ever served held nothing (and its first entry goes with a status write its
			// readiness makes anyway).
			if !podReady(p) {
				continue
			}
			out = append(out, cachev1.ServerRollout{Name: server, PodUID: p.UID, Restarts: restarts, Release: newPodRelease(change)})
			continue
		}
		e := *prev[at].DeepCopy()
		warm := slices.Contains(argsOf(p), MemoryFileArg)
		switch {
		case e.PodUID != p.UID && KeepsMemoryCopy(p):
			// Whether it restored its copy is for its memcached to say, once it serves; if not,
			// it started empty for the reason of its replacement.
			empty := replacedWhy(p, e, change, now)
			if empty.Reason == cachev1.EmptyPodReplaced {
				empty = NotRestored(now)
			}
			next := cachev1.ServerRollout{Name: server, PodUID: p.UID, Restarts: restarts, Release: newPodRelease(change), StopTime: e.StopTime, StartedEmpty: empty}
			seen = append(seen, Seen{Server: server, Pod: p, Judge: true, Next: &next})
		case e.PodUID != p.UID:
			empty := replacedWhy(p, e, change, now)
			e = cachev1.ServerRollout{Name: server, PodUID: p.UID, Restarts: restarts, Release: newPodRelease(change), StartedEmpty: empty}
			seen = append(seen, Seen{Server: server, Pod: p, Empty: empty})
		case restarts > e.Restarts && e.Restart != nil:
			// A restart the operator began: its step judges it (the entry keeps what it had).
		case restarts > e.Restarts && warm:
			seen = append(seen, Seen{Server: server, Pod: p, Judge: true})
		case restarts > e.Restarts:
			e.Restarts = restarts
			e.StartedEmpty = &cachev1.ServerEmptyStart{Reason: cachev1.EmptyRestarted, Time: now,
				Message: exitOf(p) + ", and without its memory file (keepCacheAcross MemoryChanges) a restarted memcached is empty"}
			seen = append(seen, Seen{Server: server, Pod: p, Empty: e.StartedEmpty})
		}
		out = append(out, e)
	}
	return out, seen
}

// MarkStopping records in the servers' entries when their pods that keep a copy of their memory
// file (persistence) were asked to stop: the copy their next pods restore was saved after it.
// The API server sets a pod's deletion timestamp to the end of the grace period it gives; a
// namespace editor can delete a pod, not forge when.
func MarkStopping(entries []cachev1.ServerRollout, pods []corev1.Pod) {
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp == nil || !KeepsMemoryCopy(p) {
			continue
		}
		at := slices.IndexFunc(entries, func(e cachev1.ServerRollout) bool { return e.PodUID == p.UID })
		if at >= 0 && entries[at].StopTime == nil {
			grace := time.Duration(ptr.Deref(p.DeletionGracePeriodSeconds, 0)) * time.Second
			entries[at].StopTime = &metav1.Time{Time: p.DeletionTimestamp.Add(-grace)}
		}
	}
}

// InFlight says whether a change is being made (its servers held).
func InFlight(c *cachev1.ServersChange) bool {
	return c != nil && (c.Phase == cachev1.RolloutChanging || c.Phase == cachev1.RolloutBlocked)
}

// newPodRelease is the release whose template a pod made now runs, as far as a change in flight
// needs to know: the StatefulSet controller makes a held server's pod from its current revision,
// the template of the change's fromRelease.
func newPodRelease(c *cachev1.ServersChange) int32 {
	if InFlight(c) {
		return c.FromRelease
	}
	return 0
}

// replacedWhy says why the server whose new pod is p, and whose entry was prev, started empty: a
// rollout the operator handed the change to replaced it, or something else did (a drain, an
// eviction, a deletion).
func replacedWhy(p *corev1.Pod, prev cachev1.ServerRollout, c *cachev1.ServersChange, now metav1.Time) *cachev1.ServerEmptyStart {
	if rolledOutBy(p, c) && !madeByRollout(prev, c) {
		return &cachev1.ServerEmptyStart{Reason: cachev1.EmptyRolledOut, Time: now,
			Message: fmt.Sprintf("its pod was replaced by the rollout of %s, because %s", c.What, c.Message)}
	}
	return &cachev1.ServerEmptyStart{Reason: cachev1.EmptyPodReplaced, Time: now,
		Message: "its pod was replaced (a node drained, an eviction or a deletion): a new pod's memory starts empty"}
}

// rolledOutBy says whether pod p may have been made by the rollout that change c was handed to:
// it was made since.
func rolledOutBy(p *corev1.Pod, c *cachev1.ServersChange) bool {
	return c != nil && c.Phase == cachev1.RolloutRolledOut && c.CompletionTime != nil && !p.CreationTimestamp.Before(c.CompletionTime)
}

// madeByRollout says whether the pod of a server's entry prev was already made by the rollout of
// change c (it started empty by it, or restored its items, since): the rollout replaces each
// server once, and that pod's own replacement is another's (a drain, an eviction).
func madeByRollout(prev cachev1.ServerRollout, c *cachev1.ServersChange) bool {
	if c == nil || c.CompletionTime == nil {
		return false
	}
	if s := prev.StartedEmpty; s != nil && s.Reason == cachev1.EmptyRolledOut && !s.Time.Before(c.CompletionTime) {
		return true
	}
	return prev.Restored != nil && !prev.Restored.Time.Before(c.CompletionTime)
}

// NotRestored is the empty start of a server whose new pod did not restore the copy of its
// memory file from its volume.
func NotRestored(now metav1.Time) *cachev1.ServerEmptyStart {
	return &cachev1.ServerEmptyStart{Reason: cachev1.EmptyPodReplaced, Time: now,
		Message: "its pod was replaced, and the new one did not restore the copy of its memory file from its volume: none was saved (the old pod was killed, or lost with its node), or it was older than persistence.maxAgeSeconds or made with other settings (the memcached container's log says which)"}
}

// AwaySeconds is how long a server whose pod was asked to stop at stop was away until its new
// pod p's memcached started; nil when either is not known.
func AwaySeconds(p *corev1.Pod, stop *metav1.Time) *int64 {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == labels.ChartName && cs.State.Running != nil && stop != nil {
			return ptr.To(int64(max(0, cs.State.Running.StartedAt.Sub(stop.Time).Round(time.Second)/time.Second)))
		}
	}
	return nil
}

// exitOf says how memcached's container last stopped in pod p.
func exitOf(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.LastTerminationState.Terminated; cs.Name == labels.ChartName && t != nil {
			return fmt.Sprintf("memcached stopped (%s, exit code %d) and restarted", t.Reason, t.ExitCode)
		}
	}
	return "memcached restarted"
}

// argsOf are the arguments of a pod's memcached container.
func argsOf(p *corev1.Pod) []string {
	if c := MemcachedContainer(&p.Spec); c != nil {
		return c.Args
	}
	return nil
}

// podReady says whether a pod is Ready.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// RestartsOf is the restart count of a pod's container.
func RestartsOf(p *corev1.Pod, container string) int32 {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container {
			return cs.RestartCount
		}
	}
	return 0
}

// restoreSlack is how much earlier than its container a memcached process must say it started to
// have gone on from its memory file: memcached says its start to the second, two seconds early
// (its clock starts so), and the chart's shell starts it a second after its container when it
// restarts from a file.
const restoreSlack = 5 * time.Second

// Restored says whether the memcached of pod p, whose process says it started at processStart
// (stats: time - uptime), restored its memory file at its container's last start: a memcached
// that restores its file goes on with the clock of the process that saved it, so it started well
// before its container; one that starts empty started with it. Empty when it did, else why not.
func Restored(p *corev1.Pod, processStart time.Time) string {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != labels.ChartName || cs.State.Running == nil {
			continue
		}
		if processStart.Before(cs.State.Running.StartedAt.Add(-restoreSlack)) {
			return ""
		}
		return exitOf(p) + " without restoring its memory file: it was killed before it could save it (a crash, the memory limit, the end of the grace period), or saved it with other settings"
	}
	return "memcached is not running"
}

// EmptyAfterRestart is the empty start of a server whose memcached the operator restarted in its
// pod and which did not restore its items (why: Restored's).
func EmptyAfterRestart(why string, now metav1.Time) *cachev1.ServerEmptyStart {
	return &cachev1.ServerEmptyStart{Reason: cachev1.EmptyNotRestored, Message: why, Time: now}
}
