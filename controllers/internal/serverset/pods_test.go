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

package serverset

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/example/memcached-operator/internal/rollout"
)

// The StatefulSet of a release manifest, among its other objects.
func TestStatefulSetOf(t *testing.T) {
	manifest := `---
# Source: memcached/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: m-memcached
---
# Source: memcached/templates/statefulset.yaml
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: m-memcached
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: memcached
          args: ["-m", "64"]
`
	s := StatefulSetOf(manifest)
	if s == nil || s.Name != "m-memcached" || *s.Spec.Replicas != 2 {
		t.Fatalf("StatefulSetOf = %+v", s)
	}
	if m, ok := rollout.MemoryOf(&s.Spec.Template.Spec); !ok || m.MB != 64 {
		t.Errorf("MemoryOf = %+v, %v", m, ok)
	}
	if StatefulSetOf("apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n") != nil {
		t.Error("a manifest without a StatefulSet has one")
	}
}

// A StatefulSet's servers are the pods it made (by UID), by ordinal: not a pod of the same name
// pattern made by another, one being deleted, one on the host network, or one whose name has no
// ordinal.
func TestPodsOf(t *testing.T) {
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "m-memcached", UID: "set"}}
	// pod is a pod named name whose controller has the UID owner ("": none).
	pod := func(name string, owner types.UID, change func(*corev1.Pod)) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if owner != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "StatefulSet", Name: "m-memcached", UID: owner, Controller: ptr.To(true)}}
		}
		if change != nil {
			change(&p)
		}
		return p
	}
	now := metav1.Now()
	pods := PodsOf(set, []corev1.Pod{
		pod("m-memcached-0", "set", nil),
		pod("m-memcached-2", "set", nil),
		pod("m-memcached-1", "other", nil),
		pod("m-memcached-3", "", nil),
		pod("m-memcached-4", "set", func(p *corev1.Pod) { p.DeletionTimestamp = &now }),
		pod("m-memcached-5", "set", func(p *corev1.Pod) { p.Spec.HostNetwork = true }),
		pod("m-memcached-x", "set", nil),
		pod("other-6", "set", nil),
	})
	if len(pods) != 2 || pods[0] == nil || pods[0].Name != "m-memcached-0" || pods[2] == nil || pods[2].Name != "m-memcached-2" {
		t.Errorf("PodsOf = %v, want servers 0 and 2 only", pods)
	}
	if got := Name(set, 2); got != "m-memcached-2" {
		t.Errorf("Name(2) = %q", got)
	}
}

// A server's ordinal is the number after its StatefulSet's name, written as Kubernetes writes it.
func TestOrdinalOf(t *testing.T) {
	for _, c := range []struct {
		server string
		want   int32
		ok     bool
	}{
		{"m-memcached-0", 0, true},
		{"m-memcached-12", 12, true},
		{"m-memcached-012", 0, false},
		{"m-memcached-1x", 0, false},
		{"m-memcached-", 0, false},
		{"other-1", 0, false},
		{"m-memcached-extra-1", 0, false},
	} {
		got, ok := OrdinalOf("m-memcached", c.server)
		if got != c.want || ok != c.ok {
			t.Errorf("OrdinalOf(%q) = %d, %v; want %d, %v", c.server, got, ok, c.want, c.ok)
		}
	}
}
