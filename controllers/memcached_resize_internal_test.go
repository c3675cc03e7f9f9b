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
	"maps"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/labels"
)

// How each change of the servers' template is made, in each mode (servers_change.go's table):
// memcached's memory file (-e, keepCacheAcross Restarts) decides between memory in place and
// restarts with the items.
func TestPlanTemplateChange(t *testing.T) {
	template := func(image, mb string, request, limit string, edits ...func(*corev1.PodTemplateSpec)) *corev1.PodTemplateSpec {
		t := &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/version": image}, Annotations: map[string]string{"a": "1"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "memcached", Image: "m:" + image, Args: []string{"-p", "11211", "-m", mb, "-c", "1024"},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse(request)},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limit)}},
			}, {Name: "exporter", Image: "e:0.15", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}}}}}}
		for _, e := range edits {
			e(t)
		}
		return t
	}
	warm := func(t *corev1.PodTemplateSpec) {
		t.Spec.Containers[0].Args = append(t.Spec.Containers[0].Args, "-e", "/var/cache/memcached/items")
		t.Spec.Volumes = []corev1.Volume{{Name: "memory-file"}}
	}
	annotated := func(t *corev1.PodTemplateSpec) { t.Annotations = map[string]string{"a": "2"} }
	labelled := func(t *corev1.PodTemplateSpec) { t.Labels["team"] = "x" }
	flag := func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Args[5] = "2048" }
	exporter := func(t *corev1.PodTemplateSpec) { t.Spec.Containers[1].Image = "e:0.16" }
	guaranteed := func(t *corev1.PodTemplateSpec) {
		c := &t.Spec.Containers[0]
		c.Resources.Limits[corev1.ResourceCPU] = resource.MustParse("50m")
	}
	exporterMemory := func(t *corev1.PodTemplateSpec) {
		t.Spec.Containers[1].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("64Mi")
	}
	noM := func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Args = []string{"-p", "11211"} }
	with := func(edits ...func(*corev1.PodTemplateSpec)) []func(*corev1.PodTemplateSpec) { return edits }
	for _, tc := range []struct {
		name     string
		from, to *corev1.PodTemplateSpec
		way      string
		why      string // a part of why the servers start empty
		change   string // a part of what changes, in words
	}{
		// Either mode.
		{"nothing", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.38", "64", "96Mi", "96Mi"), "", "", ""},
		{"pod annotations", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.38", "64", "96Mi", "96Mi", annotated), WayInPlace, "", "pod labels or annotations"},
		{"pod annotations, warm", template("1.6.38", "64", "96Mi", "96Mi", warm), template("1.6.38", "64", "96Mi", "96Mi", warm, annotated), WayInPlace, "", "pod labels or annotations"},
		{"pod labels", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.38", "64", "96Mi", "96Mi", labelled), WayInPlace, "", "pod labels or annotations"},
		{"the container's memory alone", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.38", "64", "96Mi", "200Mi"), WayInPlace, "", "container memory 96Mi → 200Mi"},
		{"the container's memory alone, warm", template("1.6.38", "64", "96Mi", "96Mi", warm), template("1.6.38", "64", "96Mi", "200Mi", warm), WayInPlace, "", "container memory 96Mi → 200Mi"},
		{"the exporter's image", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.38", "64", "96Mi", "96Mi", exporter), WayInPlace, "", "the exporter's image"},
		{"another flag", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.38", "64", "96Mi", "96Mi", flag), WayStartedEmpty, "memcached's flags change", ""},
		{"another flag, warm", template("1.6.38", "64", "96Mi", "96Mi", warm), template("1.6.38", "64", "96Mi", "96Mi", warm, flag), WayStartedEmpty, "memcached's flags change", ""},
		{"the exporter's memory", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.38", "64", "96Mi", "96Mi", exporterMemory), WayStartedEmpty, "the pod's spec", ""},
		{"into another QoS class", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.38", "64", "96Mi", "96Mi", guaranteed), WayStartedEmpty, "from QoS class Burstable to Guaranteed", ""},
		{"a template without -m", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.38", "64", "96Mi", "96Mi", noM), WayStartedEmpty, "no memcached container with -m", ""},
		// The mode itself.
		{"the memory file added", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.38", "64", "96Mi", "96Mi", warm), WayStartedEmpty, "memory file is added", ""},
		{"the memory file removed", template("1.6.38", "64", "96Mi", "96Mi", warm), template("1.6.38", "64", "96Mi", "96Mi"), WayStartedEmpty, "memory file is removed", ""},
		// MemoryChanges: memory in place, a new image starts empty.
		{"more item memory", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.38", "128", "160Mi", "160Mi"), WayInPlace, "", "item memory 64 → 128 MiB"},
		{"less item memory", template("1.6.38", "128", "160Mi", "160Mi"), template("1.6.38", "64", "96Mi", "96Mi"), WayInPlace, "", "item memory 128 → 64 MiB"},
		{"memcached's image", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.39", "64", "96Mi", "96Mi"), WayStartedEmpty, "without its memory file", ""},
		// Restarts: a new image restarts warm, memory starts empty.
		{"memcached's image, warm", template("1.6.38", "64", "96Mi", "96Mi", warm), template("1.6.39", "64", "96Mi", "96Mi", warm), WayWarmRestart, "", "memcached 1.6.38 → 1.6.39"},
		{"memcached's and the exporter's images and annotations, warm", template("1.6.38", "64", "96Mi", "96Mi", warm), template("1.6.39", "64", "96Mi", "96Mi", with(warm, exporter, annotated)...),
			WayWarmRestart, "", "pod labels or annotations, memcached 1.6.38 → 1.6.39, the exporter's image"},
		{"more item memory, warm", template("1.6.38", "64", "96Mi", "96Mi", warm), template("1.6.38", "128", "160Mi", "160Mi", warm), WayStartedEmpty, "only into the item memory it saved them from", ""},
		{"more item memory and the memory file's volume with it, warm", template("1.6.38", "64", "96Mi", "96Mi", warm), template("1.6.38", "128", "160Mi", "160Mi", warm, func(t *corev1.PodTemplateSpec) {
			t.Spec.Volumes[0].EmptyDir = &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}
		}), WayStartedEmpty, "item memory 64 → 128 MiB", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := planTemplateChange(tc.from, tc.to)
			if plan.way != tc.way {
				t.Errorf("way = %q (%s), want %q", plan.way, plan.why, tc.way)
			}
			if (tc.why == "") != (plan.why == "") || !strings.Contains(plan.why, tc.why) {
				t.Errorf("why the servers start empty = %q, want one with %q", plan.why, tc.why)
			}
			if tc.change != "" && !strings.Contains(plan.change(), tc.change) {
				t.Errorf("change = %q, want one with %q", plan.change(), tc.change)
			}
		})
	}
}

// A pod's labels and annotations move from the template before to the one after, and keep what
// others wrote on the pod.
func TestMovedMap(t *testing.T) {
	have := map[string]string{"controller-revision-hash": "r1", "team": "a", "old": "x"}
	got := movedMap(have, map[string]string{"team": "a", "old": "x"}, map[string]string{"team": "b", "new": "y"})
	want := map[string]string{"controller-revision-hash": "r1", "team": "b", "new": "y"}
	if !maps.Equal(got, want) {
		t.Errorf("movedMap = %v, want %v", got, want)
	}
	if have["team"] != "a" {
		t.Error("movedMap changed the pod's own map")
	}
}

// A restart restored memcached's items when it holds (nearly) what it held before.
func TestNotRestored(t *testing.T) {
	for _, tc := range []struct {
		was, now uint64
		restored bool
	}{{10000, 10000, true}, {10000, 9990, true}, {0, 0, true}, {10000, 0, false}, {10000, 120, false}} {
		if got := notRestored(tc.was, tc.now) == ""; got != tc.restored {
			t.Errorf("notRestored(%d, %d) restored = %v, want %v", tc.was, tc.now, got, tc.restored)
		}
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

// A rollout's record is written before Helm applies the change: CacheWarm claims servers started
// empty only once the StatefulSet's template has moved on from the one the servers ran.
func TestObserveRolloutOnlyOnceApplied(t *testing.T) {
	rec := resizeRecord{Revision: "servers-1", Way: WayStartedEmpty, Change: "memcached's flags", Outcome: outcomeRolledOut,
		Why: "memcached's flags changed", Since: metav1.Now(), At: ptr.To(metav1.Now())}
	servers := statefulSetWithAnnotation(rec.annotation())
	servers.Generation = 2
	for _, tc := range []struct {
		name     string
		status   appsv1.StatefulSetStatus
		claimed  bool
		contains string
	}{
		{"the upgrade failed: the template is the one the servers ran", appsv1.StatefulSetStatus{ObservedGeneration: 2, CurrentRevision: "servers-1", UpdateRevision: "servers-1"}, false, ""},
		{"rolling out", appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 1, CurrentRevision: "servers-1", UpdateRevision: "servers-2"}, true, "rolling out"},
	} {
		servers.Status = tc.status
		st := &cachev1.MemcachedStatus{}
		observeChange(st, servers, nil)
		got := memcachedCondition(*st, ConditionCacheWarm)
		if claimed := got.Reason == WayStartedEmpty; claimed != tc.claimed || !strings.Contains(got.Message, tc.contains) {
			t.Errorf("%s: CacheWarm %s %q, want started empty claimed: %v", tc.name, got.Reason, got.Message, tc.claimed)
		}
	}
}
