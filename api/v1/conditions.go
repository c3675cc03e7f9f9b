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

// The conditions of a Memcached and a MemcachedBackup (status.conditions), and the reasons that
// more than one controller writes or reads: one place for clients (kubectl wait, alerts) and for
// the controllers. The Helm reconciler's own conditions of a Memcached (Deployed, ReleaseFailed,
// Irreconcilable, Initialized, Paused) are named in internal/helm/library; the ways a change of
// the servers is made, CacheWarm's reasons, beside status.rollout (Way*).

// Condition types of both kinds (as a Deployment's).
const (
	// ConditionAvailable is True when every wanted pod is ready.
	ConditionAvailable = "Available"
	// ConditionProgressing is True while the pods roll out or scale.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when a MemcachedBackup cannot reach its desired state.
	ConditionDegraded = "Degraded"
)

// Condition types of a Memcached that the Go side writes, besides Available and Progressing.
const (
	// ConditionCacheWarm says whether the servers kept their items through the last change the
	// operator made to them and since: True (InPlace, WarmRestart, Restored), False (StartedEmpty:
	// which server and why).
	ConditionCacheWarm = "CacheWarm"
	// ConditionResizing is True while a change of the servers' memory is in flight.
	ConditionResizing = "Resizing"
	// ConditionMemoryPressure is True while memcached evicts items to store new ones: the cache
	// is smaller than what its clients keep in it.
	ConditionMemoryPressure = "MemoryPressure"
	// ConditionConnectionsSaturated is True while a pod is near its maxConnections or refused
	// connections at it.
	ConditionConnectionsSaturated = "ConnectionsSaturated"
	// ConditionServersResponsive says whether every ready server answered the operator as
	// memcached within its timeout: False (ServersUnresponsive) names those that did not.
	ConditionServersResponsive = "ServersResponsive"
	// ConditionScalingActive is True while the autopilot sizes the cache from its figures (as a
	// HorizontalPodAutoscaler's).
	ConditionScalingActive = "ScalingActive"
	// ConditionScalingLimited is True while the autopilot would step but may not: a bound, the
	// namespace's quota, or memory memcached holds.
	ConditionScalingLimited = "ScalingLimited"
	// ConditionCertificatesReady says whether every ready server serves the cache's current
	// certificate (only while spec.tls is on).
	ConditionCertificatesReady = "CertificatesReady"
)

// Reasons written by more than one controller, or read by another.
const (
	// ReasonPodsFailing: pods cannot start or keep running (Progressing False on a Memcached,
	// Degraded on a MemcachedBackup).
	ReasonPodsFailing = "PodsFailing"
	// ReasonRetiringPods: pods of an earlier release leave the Service and stop (Progressing).
	ReasonRetiringPods = "RetiringPods"
	// ReasonServersUnresponsive: a ready server did not answer as memcached (ServersResponsive
	// False, and the Event).
	ReasonServersUnresponsive = "ServersUnresponsive"

	// ReasonResizingInPlace: the servers are being resized in place (Resizing True, Progressing
	// True); ReasonResizedInPlace: the last memory change was made in place (Resizing False).
	ReasonResizingInPlace = "ResizingInPlace"
	ReasonResizedInPlace  = "ResizedInPlace"
	// ReasonRollingOut: a change rolls the servers out (Resizing True, Progressing True);
	// ReasonRolledOut: the last memory change was rolled out (Resizing False). The message says
	// why not in place.
	ReasonRollingOut = "RollingOut"
	ReasonRolledOut  = "RolledOut"
	// ReasonResizeBlocked: the API server refuses to resize a server for a policy of the
	// namespace; the servers stay as they are, held (Resizing True, Progressing False).
	ReasonResizeBlocked = "ResizeBlocked"
	// ReasonNotResizing: a memory change said to be in flight is not any more (its upgrade
	// failed, or a second change took it back) (Resizing False).
	ReasonNotResizing = "NotResizing"
	// ReasonServersStalled: no server of a change in place got further for a while (Progressing
	// False); the operator goes on trying, and the message says what it waits for.
	ReasonServersStalled = "ServersStalled"
)
