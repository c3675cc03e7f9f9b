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

package progress

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

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
			if got := PodTrouble(tc.pods); got != tc.want {
				t.Errorf("PodTrouble = %q, want %q", got, tc.want)
			}
		})
	}
}
