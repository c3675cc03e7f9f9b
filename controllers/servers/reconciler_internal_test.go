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
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/memcachedstatus"
	"github.com/example/memcached-operator/controllers/internal/texts"
)

// What the Go side reports of a Memcached's servers, from its StatefulSet and the pods of an
// earlier release still up.
func TestObserveOperand(t *testing.T) {
	servers := func(image string, generation, observed int64, replicas, updated, ready, available int32) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Generation: generation},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "memcached", Image: image}}}}},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: observed, Replicas: replicas, UpdatedReplicas: updated,
				ReadyReplicas: ready, AvailableReplicas: available},
		}
	}
	for _, tc := range []struct {
		name                   string
		servers                *appsv1.StatefulSet
		retiring               int
		trouble                string
		wantVersion            string
		available, progressing string // "status/reason"
	}{
		{"no StatefulSet yet", nil, 0, "", "1.6.38", "False/ServersMissing", "True/ServersMissing"},
		{"every server on the new version", servers("docker.io/library/memcached:1.6.39", 2, 2, 3, 3, 3, 3), 0, "", "1.6.39", "True/PodsAvailable", "False/Complete"},
		{"a change the StatefulSet controller has not seen", servers("docker.io/library/memcached:1.6.39", 3, 2, 3, 3, 3, 3), 0, "", "1.6.38", "True/PodsAvailable", "True/RollingOut"},
		{"replacing one server at a time", servers("docker.io/library/memcached:1.6.39", 2, 2, 3, 1, 2, 2), 0, "", "1.6.38", "False/PodsUnavailable", "True/RollingOut"},
		{"servers done, old pods retiring", servers("docker.io/library/memcached:1.6.39", 2, 2, 3, 3, 3, 3), 2, "", "1.6.38", "True/PodsAvailable", "True/" + cachev1.ReasonRetiringPods},
		{"a server cannot pull its image", servers("docker.io/library/memcached:1.6.39", 2, 2, 3, 2, 2, 2), 0, "pod p, container memcached: ImagePullBackOff: ...", "1.6.38", "False/PodsUnavailable", "False/" + cachev1.ReasonPodsFailing},
		{"a server failed once, all available again", servers("docker.io/library/memcached:1.6.39", 2, 2, 3, 3, 3, 3), 0, "pod p, container memcached: CrashLoopBackOff: ...", "1.6.39", "True/PodsAvailable", "False/Complete"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &cachev1.MemcachedStatus{Version: "1.6.38"}
			observeOperand(st, tc.servers, tc.retiring, tc.trouble)
			if st.Version != tc.wantVersion {
				t.Errorf("version = %q, want %q", st.Version, tc.wantVersion)
			}
			got := map[string]string{}
			for _, c := range st.Conditions {
				got[c.Type] = string(c.Status) + "/" + c.Reason
			}
			if got[cachev1.ConditionAvailable] != tc.available || got[cachev1.ConditionProgressing] != tc.progressing {
				t.Errorf("Available, Progressing = %q, %q; want %q, %q", got[cachev1.ConditionAvailable], got[cachev1.ConditionProgressing], tc.available, tc.progressing)
			}
		})
	}
}

// Which reports wait to be written with what follows them (progressWait): those that say only
// how far a rollout has come.
func TestProgressOnly(t *testing.T) {
	// observe is the next report after live, as Reconcile makes it: live observed anew.
	observe := func(live cachev1.MemcachedStatus, observed int64, replicas, updated, ready, available int32, addr ...string) cachev1.MemcachedStatus {
		st := *live.DeepCopy()
		if addr != nil {
			st.Servers = addr
		}
		observeOperand(&st, &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Generation: 1},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "memcached", Image: "docker.io/library/memcached:1.6.39"}}}}},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: observed, Replicas: replicas, UpdatedReplicas: updated,
				ReadyReplicas: ready, AvailableReplicas: available},
		}, 0, "")
		return st
	}
	unseen := observe(cachev1.MemcachedStatus{Version: "1.6.39", Servers: []string{"a"}}, 0, 0, 0, 0, 0)
	seen := observe(unseen, 1, 0, 0, 0, 0)
	made := observe(seen, 1, 2, 2, 0, 0)
	oneReady := observe(made, 1, 2, 2, 1, 1)
	failing := func(live cachev1.MemcachedStatus, trouble string) cachev1.MemcachedStatus {
		st := *live.DeepCopy()
		memcachedstatus.SetCondition(&st, cachev1.ConditionProgressing, metav1.ConditionFalse, cachev1.ReasonPodsFailing, trouble)
		return st
	}
	// A new StatefulSet's first step, the generation seen before any pod is made, is no change
	// at all: no status write, not even a delayed one.
	if !equality.Semantic.DeepEqual(unseen, seen) {
		t.Errorf("the generation seen with no pod made changes the report:\n%+v\n%+v", unseen.Conditions, seen.Conditions)
	}
	// With pods up, a change not seen yet is not reported as their progress.
	upgrading := observe(oneReady, 0, 2, 2, 2, 2)
	if !strings.Contains(memcachedstatus.Condition(upgrading, cachev1.ConditionProgressing).Message, "not seen yet") {
		t.Errorf("a change not seen yet with pods up is reported as %q", memcachedstatus.Condition(upgrading, cachev1.ConditionProgressing).Message)
	}
	pulling := failing(made, "pod p: ErrImagePull")
	for _, tc := range []struct {
		name     string
		live, st cachev1.MemcachedStatus
		want     bool
	}{
		{"a change seen with pods up, none updated yet", upgrading, observe(upgrading, 1, 2, 0, 2, 2), true},
		{"the pods made", seen, made, true},
		{"a pod ready, not all available yet", made, oneReady, true},
		{"all available: Available and Progressing change", oneReady, observe(oneReady, 1, 2, 2, 2, 2), false},
		{"the server list changes", unseen, observe(unseen, 0, 0, 0, 0, 0, "a", "b"), false},
		{"nothing changes", unseen, unseen, true},
		{"a failing pod's new reason", pulling, failing(pulling, "pod p: ImagePullBackOff"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := progressOnly(tc.live, tc.st); got != tc.want {
				t.Errorf("progressOnly = %v, want %v", got, tc.want)
			}
		})
	}
}

// The server list: every expected server in the order of its ordinal, by its own DNS name; the
// ready ones of them; and the ConfigMap that holds the list.
func TestObserveServers(t *testing.T) {
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "mc-memcached", Namespace: "tenant-a", UID: "sts-1"},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), ServiceName: "mc-memcached-headless"},
	}
	pod := func(name string, owner types.UID, ready bool) corev1.Pod {
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", UID: owner, Controller: ptr.To(true)}}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}}
	}
	st := &cachev1.MemcachedStatus{}
	observeServers(st, set, []corev1.Pod{pod("mc-memcached-2", "sts-1", true), pod("mc-memcached-0", "sts-1", true),
		pod("mc-memcached-1", "sts-1", false), pod("mc-memcached-3", "sts-1", true), pod("mc-memcached-1", "someone-else", true)})
	want := []string{"mc-memcached-0.mc-memcached-headless.tenant-a.svc:11211", "mc-memcached-1.mc-memcached-headless.tenant-a.svc:11211",
		"mc-memcached-2.mc-memcached-headless.tenant-a.svc:11211"}
	if !slices.Equal(st.Servers, want) {
		t.Errorf("servers = %q, want %q", st.Servers, want)
	}
	if wantReady := []string{want[0], want[2]}; !slices.Equal(st.ReadyServers, wantReady) {
		t.Errorf("readyServers = %q, want %q (a server beyond replicas, or not the StatefulSet's, is none)", st.ReadyServers, wantReady)
	}
	if st.ServersConfigMap != "mc-memcached-servers" {
		t.Errorf("serversConfigMap = %q", st.ServersConfigMap)
	}
	observeServers(st, nil, nil)
	if st.Servers != nil || st.ReadyServers != nil || st.ServersConfigMap != "" {
		t.Errorf("without a StatefulSet the status lists servers: %+v", st)
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
		{"only the Go side's", []cachev1.HelmCondition{cond(cachev1.ConditionAvailable, metav1.ConditionFalse)}, ""},
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

// Status texts read as people write: counts agree with their nouns and verbs, rates are rounded.
func TestStatusTexts(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{texts.Count(1, "server", "servers"), "1 server"},
		{texts.Count(int32(3), "server", "servers"), "3 servers"},
		{texts.Count(0, "server", "servers"), "0 servers"},
		{texts.PluralVerb(1, "runs", "run"), "runs"},
		{texts.PerSecond(12666.666000000001), "12667"},
		{texts.PerSecond(2.45), "2.5"},
		{texts.PerSecond(0.041), "0.04"},
		{texts.PerSecond(0), "0"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
	st := &cachev1.MemcachedStatus{}
	one := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 1},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "memcached", Image: "docker.io/library/memcached:1.6.39"}}}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}}
	observeOperand(st, one, 1, "")
	if got := memcachedstatus.Condition(*st, cachev1.ConditionProgressing).Message; got != "memcached 1.6.39 runs on 1 server; 1 pod of the earlier release leaves the Service and stops" {
		t.Errorf("Progressing says %q", got)
	}
	observeOperand(st, one, 0, "")
	if got := memcachedstatus.Condition(*st, cachev1.ConditionProgressing).Message; got != "1 server runs memcached 1.6.39" {
		t.Errorf("Progressing says %q", got)
	}
}
