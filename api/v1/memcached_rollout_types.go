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

package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// RolloutStatus is how the operator changes a cache's servers (status.rollout): the change it
// makes now, or made last, and each server as it last saw it, by its pod's UID. It is kept in
// status, which only the operator writes, so that an operator restart, a new leader or a second
// change goes on from what is true on the cluster, and a namespace editor cannot forge a step
// (docs/upgrades.md, "What keeps the cache warm").
type RolloutStatus struct {
	// change is the change of the servers' template in flight, or the last one.
	// +optional
	Change *ServersChange `json:"change,omitempty"`

	// servers are the cache's servers, by ordinal, as the operator last saw them.
	// +listType=map
	// +listMapKey=name
	// +optional
	Servers []ServerRollout `json:"servers,omitempty"`
}

// Phases of a change of the servers (status.rollout.change.phase).
const (
	// RolloutChanging: the StatefulSet's rollout is held, and the servers are changed one step at
	// a time (once the upgrade that makes the change is applied).
	RolloutChanging = "Changing"
	// RolloutBlocked: a policy of the namespace (a ResourceQuota, a LimitRange) refuses a step;
	// the servers stay as they are, held, and the step is tried again.
	RolloutBlocked = "Blocked"
	// RolloutComplete: every server was changed without a new pod.
	RolloutComplete = "Complete"
	// RolloutRolledOut: the StatefulSet replaces the servers, one at a time, each starting
	// empty; message says why.
	RolloutRolledOut = "RolledOut"
)

// Ways a change of the servers is made (status.rollout.change.way): the reasons of the CacheWarm
// condition.
const (
	// WayInPlace: written onto the running servers, no memcached restarted.
	WayInPlace = "InPlace"
	// WayWarmRestart: each server's memcached restarted in its pod, one at a time, with its items.
	WayWarmRestart = "WarmRestart"
	// WayStartedEmpty: the servers rolled out (each a new pod), or a server restarted without
	// its items: each such server started empty.
	WayStartedEmpty = "StartedEmpty"
	// CacheRestored: a server's pod was replaced (a drain, an eviction, a deletion) and its new
	// pod restored the copy of its memory file from its volume (persistence): a CacheWarm reason
	// and an Event's, not a way of making a change.
	CacheRestored = "Restored"
)

// ServersChange is a change of the servers' pod template and how the operator makes it.
type ServersChange struct {
	// what the change changes, in words.
	What string `json:"what"`

	// way is how: InPlace, WarmRestart or StartedEmpty.
	Way string `json:"way"`

	// phase is where the change stands: Changing, Blocked, Complete or RolledOut.
	Phase string `json:"phase"`

	// message says why the servers roll out, why the change waits, or what it waits for.
	// +optional
	Message string `json:"message,omitempty"`

	// fromRelease is the release revision whose template the servers ran when the change came;
	// toRelease the one they are changed to (0 until the upgrade is applied).
	FromRelease int32 `json:"fromRelease"`
	// +optional
	ToRelease int32 `json:"toRelease,omitempty"`

	// upgradeFrom is the release revision that an upgrade of the release is being applied from:
	// the servers wait for it (a minute at most, then the change goes on without it), so that a
	// second change is folded in rather than rolled out; upgradeTime is since when.
	// +optional
	UpgradeFrom int32 `json:"upgradeFrom,omitempty"`
	// +optional
	UpgradeTime *metav1.Time `json:"upgradeTime,omitempty"`

	// revision is the StatefulSet's template revision of fromRelease.
	// +optional
	Revision string `json:"revision,omitempty"`

	// held is how many servers, the lowest ordinals, the StatefulSet's partition keeps for the
	// change (the others, added by it, start with the new template).
	// +optional
	Held int32 `json:"held,omitempty"`

	// memory is the change of the servers' memory, when it has one.
	// +optional
	Memory *MemoryChange `json:"memory,omitempty"`

	// since is when the change came.
	Since metav1.Time `json:"since"`

	// progressTime is when the last server was done.
	// +optional
	ProgressTime *metav1.Time `json:"progressTime,omitempty"`

	// completionTime is when the change was done, or handed to the StatefulSet's rollout.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// MemoryChange is a change of the servers' memory: memcached's item memory (-m) and its
// container's memory limit.
type MemoryChange struct {
	FromMB int32 `json:"fromMB"`
	ToMB   int32 `json:"toMB"`
	// +optional
	FromLimit string `json:"fromLimit,omitempty"`
	// +optional
	ToLimit string `json:"toLimit,omitempty"`

	// fits says every held server holds no more than a smaller item memory (asked once).
	// +optional
	Fits bool `json:"fits,omitempty"`
}

// ServerRollout is one server as the operator last saw it.
type ServerRollout struct {
	// name is the server's pod's name.
	Name string `json:"name"`

	// podUID is the UID of that pod: another UID is another pod, which started empty.
	PodUID types.UID `json:"podUID"`

	// restarts is how often memcached had restarted in that pod.
	// +optional
	Restarts int32 `json:"restarts,omitempty"`

	// release is, during a change, the release revision whose template the server runs.
	// +optional
	Release int32 `json:"release,omitempty"`

	// restart is memcached's restart in its pod that the operator began, and what it held.
	// +optional
	Restart *ServerRestart `json:"restart,omitempty"`

	// startedEmpty says that the server started empty since the last change began, and why.
	// +optional
	StartedEmpty *ServerEmptyStart `json:"startedEmpty,omitempty"`

	// stopTime is when that pod was asked to stop (its deletion began, as the API server
	// recorded it), with persistence: the copy of its memory file that its next pod restores was
	// saved after it.
	// +optional
	StopTime *metav1.Time `json:"stopTime,omitempty"`

	// restored says that the server's pod was replaced and it restored the copy of its memory
	// file from its volume (persistence).
	// +optional
	Restored *ServerRestore `json:"restored,omitempty"`
}

// ServerRestore is a server whose new pod restored the copy of its memory file from its volume.
type ServerRestore struct {
	// items memcached held once it had restored them.
	Items int64 `json:"items"`
	// awaySeconds is how long the server was away, from its old pod's stop to its new memcached's
	// start, as Kubernetes recorded them: the items it brought back are at most that old, and
	// missed every write and delete its clients sent meanwhile. Unset when the operator did not
	// see the old pod stop.
	// +optional
	AwaySeconds *int64 `json:"awaySeconds,omitempty"`
	// time is when the operator saw it.
	Time metav1.Time `json:"time"`
}

// ServerRestart is a restart of memcached in its pod that the operator began.
type ServerRestart struct {
	// items memcached held right before.
	Items int64 `json:"items"`
	// processStart is when that memcached process started, as it said: a memcached that restores
	// its memory file goes on with it.
	ProcessStart metav1.Time `json:"processStart"`
	// time is when the operator began the restart.
	Time metav1.Time `json:"time"`
}

// ServerEmptyStart is a server that started empty.
type ServerEmptyStart struct {
	// reason: PodReplaced, Restarted, NotRestored or RolledOut.
	Reason string `json:"reason"`
	// message says why, for people.
	Message string `json:"message"`
	// time is when the operator saw it.
	Time metav1.Time `json:"time"`
}

// Reasons a server started empty (status.rollout.servers[].startedEmpty.reason).
const (
	// EmptyPodReplaced: its pod was replaced outside a rollout (a drain, an eviction, a deletion).
	EmptyPodReplaced = "PodReplaced"
	// EmptyRolledOut: a change of the servers rolled them out (a new pod each).
	EmptyRolledOut = "RolledOut"
	// EmptyNotRestored: memcached restarted in its pod but did not restore its memory file.
	EmptyNotRestored = "NotRestored"
	// EmptyRestarted: memcached restarted in its pod (a crash, a failed probe) without a memory
	// file to restore from, or was killed before it could save it.
	EmptyRestarted = "Restarted"
)
