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

// Package progress says where a Deployment or StatefulSet stands in bringing its pods to its spec,
// and why a pod cannot start: every status the operator reports about pods (Memcached,
// MemcachedBackup, the OperatorCondition Upgradeable) reads it from here, so that they agree on
// when a rollout is complete.
package progress

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/example/memcached-operator/controllers/internal/texts"
)

// Progress is where a Deployment or StatefulSet stands in bringing its pods to its spec.
type Progress struct {
	Want, Replicas, Updated, Ready, Available int32
	// Seen: the workload's controller has seen the latest spec.
	Seen bool
	// Failure says why the rollout cannot progress, or is "".
	Failure string
}

// OfStatefulSet is where a StatefulSet (the memcached servers) stands: a StatefulSet reports no
// failure of its own (PodTrouble reads the pods' own).
func OfStatefulSet(s *appsv1.StatefulSet) Progress {
	want := int32(1)
	if s.Spec.Replicas != nil {
		want = *s.Spec.Replicas
	}
	st := s.Status
	return Progress{
		Want: want, Replicas: st.Replicas, Updated: st.UpdatedReplicas, Ready: st.ReadyReplicas,
		Available: st.AvailableReplicas, Seen: st.ObservedGeneration >= s.Generation,
	}
}

// OfDeployment is where a Deployment stands, with the failure its conditions report.
func OfDeployment(d *appsv1.Deployment) Progress {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	r := Progress{
		Want: want, Replicas: st.Replicas, Updated: st.UpdatedReplicas, Ready: st.ReadyReplicas,
		Available: st.AvailableReplicas, Seen: st.ObservedGeneration >= d.Generation,
	}
	for _, c := range st.Conditions {
		switch {
		case c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue:
			r.Failure = c.Message
		case c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded":
			r.Failure = c.Message
		}
	}
	return r
}

// Complete: every wanted pod runs the latest spec and is available, and no old pod is left.
func (r Progress) Complete() bool {
	return r.Seen && r.Updated == r.Want && r.Replicas == r.Want && r.Available >= r.Want
}

// AllAvailable: as many pods as wanted are available, of any version (a rolling update that
// starts new pods before stopping old ones keeps this true).
func (r Progress) AllAvailable() bool { return r.Available >= r.Want }

// String says where the rollout stands. While its controller reports no pod, "0 of N updated" holds
// whether or not it has seen the spec: a new StatefulSet's first step (the generation seen, no pod
// yet) then says nothing new, and is no status write. With pods, counts from before the spec was
// seen are not about it.
func (r Progress) String() string {
	if !r.Seen && r.Replicas > 0 {
		return "has a change its controller has not seen yet"
	}
	return fmt.Sprintf("is rolling out: %s updated, %d available", texts.CountOf(r.Updated, r.Want, "pod", "pods"), r.Available)
}

// failingContainerReasons are the waiting reasons of a container that will not start by itself:
// the kubelet retries with a back-off, but the Deployment reports nothing until its progress
// deadline (10 minutes by default).
var failingContainerReasons = []string{
	"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
	"CrashLoopBackOff", "CreateContainerConfigError", "CreateContainerError", "RunContainerError",
}

// PodTrouble says why a pod cannot start or keep running, read from the pods' own status as
// soon as the kubelet or the scheduler reports it: an image that cannot be pulled, a container
// that keeps crashing or cannot be created, a pod that cannot be scheduled. "" when none is in
// trouble; the first pod by name otherwise.
func PodTrouble(pods []corev1.Pod) string {
	sorted := slices.Clone(pods)
	slices.SortFunc(sorted, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range sorted {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
			if w := cs.State.Waiting; w != nil && slices.Contains(failingContainerReasons, w.Reason) {
				return fmt.Sprintf("pod %s, container %s: %s: %s", p.Name, cs.Name, w.Reason, w.Message)
			}
			// Between its back-offs a crashing container runs for a while: it is still in
			// trouble until it is ready again.
			if t := cs.LastTerminationState.Terminated; t != nil && cs.RestartCount > 0 && !cs.Ready {
				return fmt.Sprintf("pod %s, container %s: restarted %s, last ended %s (exit code %d)", p.Name, cs.Name, texts.Count(cs.RestartCount, "time", "times"), t.Reason, t.ExitCode)
			}
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return fmt.Sprintf("pod %s cannot be scheduled: %s", p.Name, c.Message)
			}
		}
	}
	return ""
}
