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
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/memcached-operator/internal/labels"
)

// Which changes of the servers' template are made in place: memcached's -m and its container's
// resources, and nothing else.
func TestMemoryOnlyChange(t *testing.T) {
	template := func(image, mb string, request, limit string, edits ...func(*corev1.PodTemplateSpec)) *corev1.PodTemplateSpec {
		t := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "memcached", Image: image, Args: []string{"-p", "11211", "-m", mb, "-c", "1024"},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse(request)},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limit)}},
		}}}}
		for _, e := range edits {
			e(t)
		}
		return t
	}
	for _, tc := range []struct {
		name     string
		from, to *corev1.PodTemplateSpec
		why      string // "" when in place
		mb       int32
	}{
		{"more item memory and container memory", template("m:1.6", "64", "96Mi", "96Mi"), template("m:1.6", "128", "160Mi", "160Mi"), "", 128},
		{"less", template("m:1.6", "128", "160Mi", "160Mi"), template("m:1.6", "64", "96Mi", "96Mi"), "", 64},
		{"the container's memory alone", template("m:1.6", "64", "96Mi", "96Mi"), template("m:1.6", "64", "96Mi", "200Mi"), "", 64},
		{"memory and the image", template("m:1.6.38", "64", "96Mi", "96Mi"), template("m:1.6.39", "128", "160Mi", "160Mi"), "not to memory alone", 128},
		{"memory and another flag", template("m:1.6", "64", "96Mi", "96Mi"), template("m:1.6", "128", "160Mi", "160Mi", func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Args[5] = "2048"
		}), "not to memory alone", 128},
		{"nothing", template("m:1.6", "64", "96Mi", "96Mi"), template("m:1.6", "64", "96Mi", "96Mi"), "memory does not change", 64},
		{"into another QoS class", template("m:1.6", "64", "96Mi", "96Mi"), template("m:1.6", "64", "96Mi", "96Mi", func(t *corev1.PodTemplateSpec) {
			c := &t.Spec.Containers[0]
			c.Resources.Limits[corev1.ResourceCPU] = resource.MustParse("50m")
			c.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("96Mi")
		}), "from QoS class Burstable to Guaranteed", 64},
		{"a template without -m", template("m:1.6", "64", "96Mi", "96Mi"), template("m:1.6", "64", "96Mi", "96Mi", func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Args = []string{"-p", "11211"}
		}), "no memcached container with -m", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, after, why := memoryOnlyChange(tc.from, tc.to)
			if (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
				t.Errorf("why not in place = %q, want %q", why, tc.why)
			}
			if after.MB != tc.mb {
				t.Errorf("item memory after = %d, want %d", after.MB, tc.mb)
			}
		})
	}
}

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
	s := statefulSetOf(manifest)
	if s == nil || s.Name != "m-memcached" || *s.Spec.Replicas != 2 {
		t.Fatalf("statefulSetOf = %+v", s)
	}
	if m, ok := memoryOf(&s.Spec.Template.Spec); !ok || m.MB != 64 {
		t.Errorf("memoryOf = %+v, %v", m, ok)
	}
	if statefulSetOf("apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n") != nil {
		t.Error("a manifest without a StatefulSet has one")
	}
}

// The annotation that records a memory change says what changed, in words.
func TestResizeRecordSaysWhatChanged(t *testing.T) {
	for _, tc := range []struct {
		rec  resizeRecord
		want string
	}{
		{resizeRecord{FromMB: 64, ToMB: 128, FromLimit: "96Mi", ToLimit: "160Mi"}, "item memory 64 → 128 MiB, container memory 96Mi → 160Mi"},
		{resizeRecord{FromMB: 64, ToMB: 64, FromLimit: "96Mi", ToLimit: "200Mi"}, "container memory 96Mi → 200Mi"},
		{resizeRecord{FromMB: 64, ToMB: 64, FromLimit: "96Mi", ToLimit: "96Mi"}, "container resources"},
	} {
		if got := tc.rec.change(); got != tc.want {
			t.Errorf("change() = %q, want %q", got, tc.want)
		}
		back := resizeRecordOf(statefulSetWithAnnotation(tc.rec.annotation()))
		if back == nil || back.change() != tc.want {
			t.Errorf("the annotation does not read back: %+v", back)
		}
	}
	if resizeRecordOf(statefulSetWithAnnotation("not json")) != nil {
		t.Error("an annotation that does not parse is a record")
	}
}

func statefulSetWithAnnotation(v string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{labels.ResizeHold: v}}}
}
