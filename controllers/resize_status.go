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
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/labels"
)

// What status says of an in-place change: the Resizing condition and the servers' progress
// (see memcached_resize.go).

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
