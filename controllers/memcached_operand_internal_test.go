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
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// What the Go side reports of a Memcached's pods, from its Deployment and the pods of an earlier
// release still up.
func TestObserveOperand(t *testing.T) {
	deployment := func(image string, generation, observed int64, replicas, updated, ready, available int32, conditions ...appsv1.DeploymentCondition) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Generation: generation},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "memcached", Image: image}}}}},
			Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: replicas, UpdatedReplicas: updated,
				ReadyReplicas: ready, AvailableReplicas: available, Conditions: conditions},
		}
	}
	stuck := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
		Reason: "ProgressDeadlineExceeded", Message: "ReplicaSet has timed out progressing"}
	for _, tc := range []struct {
		name                   string
		deploy                 *appsv1.Deployment
		retiring               int
		trouble                string
		wantVersion            string
		available, progressing string // "status/reason"
	}{
		{"no Deployment yet", nil, 0, "", "1.6.38", "False/DeploymentMissing", "True/DeploymentMissing"},
		{"every pod on the new version", deployment("docker.io/library/memcached:1.6.39", 2, 2, 3, 3, 3, 3), 0, "", "1.6.39", "True/PodsAvailable", "False/Complete"},
		{"a change the Deployment controller has not seen", deployment("docker.io/library/memcached:1.6.39", 3, 2, 3, 3, 3, 3), 0, "", "1.6.38", "True/PodsAvailable", "True/RollingOut"},
		{"rolling out with a surge pod", deployment("docker.io/library/memcached:1.6.39", 2, 2, 4, 1, 4, 4), 0, "", "1.6.38", "True/PodsAvailable", "True/RollingOut"},
		{"new pods done, old ones retiring", deployment("docker.io/library/memcached:1.6.39", 2, 2, 3, 3, 3, 3), 2, "", "1.6.38", "True/PodsAvailable", "True/" + ReasonRetiringPods},
		{"too few available", deployment("docker.io/library/memcached:1.6.39", 2, 2, 3, 3, 1, 1), 0, "", "1.6.38", "False/PodsUnavailable", "True/RollingOut"},
		{"a pod cannot pull its image", deployment("docker.io/library/memcached:1.6.39", 2, 2, 3, 3, 2, 2), 0, "pod p, container memcached: ImagePullBackOff: ...", "1.6.38", "False/PodsUnavailable", "False/" + ReasonPodsFailing},
		{"a pod failed once, all available again", deployment("docker.io/library/memcached:1.6.39", 2, 2, 3, 3, 3, 3), 0, "pod p, container memcached: CrashLoopBackOff: ...", "1.6.39", "True/PodsAvailable", "False/Complete"},
		{"past its progress deadline", deployment("docker.io/library/memcached:1.6.39", 2, 2, 3, 1, 2, 2, stuck), 0, "", "1.6.38", "False/PodsUnavailable", "False/RolloutFailed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &cachev1.MemcachedStatus{Version: "1.6.38"}
			observeOperand(st, tc.deploy, tc.retiring, tc.trouble)
			if st.Version != tc.wantVersion {
				t.Errorf("version = %q, want %q", st.Version, tc.wantVersion)
			}
			got := map[string]string{}
			for _, c := range st.Conditions {
				got[c.Type] = string(c.Status) + "/" + c.Reason
			}
			if got[ConditionAvailable] != tc.available || got[ConditionProgressing] != tc.progressing {
				t.Errorf("Available, Progressing = %q, %q; want %q, %q", got[ConditionAvailable], got[ConditionProgressing], tc.available, tc.progressing)
			}
		})
	}
}

// Which pod states say a pod will not start or keep running by itself.
func TestPodTrouble(t *testing.T) {
	waiting := func(name, reason string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "memcached", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "details"}}}}}}
	}
	unschedulable := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available"}}}}
	restarted := func(ready bool) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "memcached", Ready: ready, RestartCount: 3, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 71}}}}}}
	}
	deleted := waiting("a", "ImagePullBackOff")
	deleted.DeletionTimestamp = ptr.To(metav1.Now())
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		want string
	}{
		{"none", nil, ""},
		{"starting", []corev1.Pod{waiting("a", "ContainerCreating")}, ""},
		{"an image that cannot be pulled, first pod by name", []corev1.Pod{waiting("b", "ErrImagePull"), waiting("a", "ImagePullBackOff")},
			"pod a, container memcached: ImagePullBackOff: details"},
		{"crashing", []corev1.Pod{waiting("a", "CrashLoopBackOff")}, "pod a, container memcached: CrashLoopBackOff: details"},
		{"a pod being deleted does not count", []corev1.Pod{deleted}, ""},
		{"crashing, running between back-offs", []corev1.Pod{restarted(false)}, "pod a, container memcached: restarted 3 times, last ended Error (exit code 71)"},
		{"restarted once, ready again", []corev1.Pod{restarted(true)}, ""},
		{"unschedulable", []corev1.Pod{unschedulable}, "pod a cannot be scheduled: 0/1 nodes are available"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podTrouble(tc.pods); got != tc.want {
				t.Errorf("podTrouble = %q, want %q", got, tc.want)
			}
		})
	}
}

// The Go side's first report waits for the Helm side to say how the first install went.
func TestHelmOutcome(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus) cachev1.HelmCondition {
		return cachev1.HelmCondition{Type: typ, Status: status}
	}
	for _, tc := range []struct {
		name       string
		conditions []cachev1.HelmCondition
		want       string
	}{
		{"nothing said yet", nil, ""},
		{"only the Go side's", []cachev1.HelmCondition{cond(ConditionAvailable, metav1.ConditionFalse)}, ""},
		{"deployed", []cachev1.HelmCondition{cond("Initialized", "True"), cond("Deployed", "True"), cond("ReleaseFailed", "False")}, "Deployed"},
		{"the install failed", []cachev1.HelmCondition{cond("Deployed", "False"), cond("ReleaseFailed", "True")}, "ReleaseFailed"},
		{"cannot be reconciled", []cachev1.HelmCondition{cond("Irreconcilable", "True")}, "Irreconcilable"},
		{"an upgrade failed, the last release still deployed", []cachev1.HelmCondition{cond("Deployed", "True"), cond("ReleaseFailed", "True")}, "ReleaseFailed"},
		{"said, but not deployed", []cachev1.HelmCondition{cond("Deployed", "False")}, "ReleaseFailed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := helmOutcome(cachev1.MemcachedStatus{Conditions: tc.conditions}); got != tc.want {
				t.Errorf("helmOutcome = %q, want %q", got, tc.want)
			}
		})
	}
}
