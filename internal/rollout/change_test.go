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

package rollout

import (
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// How each change of the servers' template is made, in each mode (doc.go's table):
// memcached's memory file (-e, keepCacheAcross Restarts) decides between memory in place and
// restarts with the items.
func TestPlan(t *testing.T) {
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
		{"pod annotations", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.38", "64", "96Mi", "96Mi", annotated), cachev1.WayInPlace, "", "pod labels or annotations"},
		{"pod annotations, warm", template("1.6.38", "64", "96Mi", "96Mi", warm), template("1.6.38", "64", "96Mi", "96Mi", warm, annotated), cachev1.WayInPlace, "", "pod labels or annotations"},
		{"pod labels", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.38", "64", "96Mi", "96Mi", labelled), cachev1.WayInPlace, "", "pod labels or annotations"},
		{"the container's memory alone", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.38", "64", "96Mi", "200Mi"), cachev1.WayInPlace, "", "container memory 96Mi → 200Mi"},
		{"the container's memory alone, warm", template("1.6.38", "64", "96Mi", "96Mi", warm), template("1.6.38", "64", "96Mi", "200Mi", warm), cachev1.WayInPlace, "", "container memory 96Mi → 200Mi"},
		{"the exporter's image", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.38", "64", "96Mi", "96Mi", exporter), cachev1.WayInPlace, "", "the exporter's image"},
		{"another flag", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.38", "64", "96Mi", "96Mi", flag), cachev1.WayStartedEmpty, "memcached's flags change", ""},
		{"another flag, warm", template("1.6.38", "64", "96Mi", "96Mi", warm), template("1.6.38", "64", "96Mi", "96Mi", warm, flag), cachev1.WayStartedEmpty, "memcached's flags change", ""},
		{"the exporter's memory", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.38", "64", "96Mi", "96Mi", exporterMemory), cachev1.WayStartedEmpty, "the pod's spec", ""},
		{"into another QoS class", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.38", "64", "96Mi", "96Mi", guaranteed), cachev1.WayStartedEmpty, "from QoS class Burstable to Guaranteed", ""},
		{"a template without -m", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.38", "64", "96Mi", "96Mi", noM), cachev1.WayStartedEmpty, "no memcached container with -m", ""},
		// The mode itself.
		{"the memory file added", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.38", "64", "96Mi", "96Mi", warm), cachev1.WayStartedEmpty, "memory file is added", ""},
		{"the memory file removed", template("1.6.38", "64", "96Mi", "96Mi", warm), template("1.6.38", "64", "96Mi", "96Mi"), cachev1.WayStartedEmpty, "memory file is removed", ""},
		// MemoryChanges: memory in place, a new image starts empty.
		{"more item memory", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.38", "128", "160Mi", "160Mi"), cachev1.WayInPlace, "", "item memory 64 → 128 MiB"},
		{"less item memory", template("1.6.38", "128", "160Mi", "160Mi"), template("1.6.38", "64", "96Mi", "96Mi"), cachev1.WayInPlace, "", "item memory 128 → 64 MiB"},
		{"memcached's image", template("1.6.38", "64", "96Mi", "96Mi"), template("1.6.39", "64", "96Mi", "96Mi"), cachev1.WayStartedEmpty, "without its memory file", ""},
		// Restarts: a new image restarts warm, memory starts empty.
		{"memcached's image, warm", template("1.6.38", "64", "96Mi", "96Mi", warm), template("1.6.39", "64", "96Mi", "96Mi", warm), cachev1.WayWarmRestart, "", "memcached 1.6.38 → 1.6.39"},
		{"memcached's and the exporter's images and annotations, warm", template("1.6.38", "64", "96Mi", "96Mi", warm), template("1.6.39", "64", "96Mi", "96Mi", with(warm, exporter, annotated)...),
			cachev1.WayWarmRestart, "", "pod labels or annotations, memcached 1.6.38 → 1.6.39, the exporter's image"},
		{"more item memory, warm", template("1.6.38", "64", "96Mi", "96Mi", warm), template("1.6.38", "128", "160Mi", "160Mi", warm), cachev1.WayStartedEmpty, "only into the item memory it saved them from", ""},
		{"more item memory and the memory file's volume with it, warm", template("1.6.38", "64", "96Mi", "96Mi", warm), template("1.6.38", "128", "160Mi", "160Mi", warm, func(t *corev1.PodTemplateSpec) {
			t.Spec.Volumes[0].EmptyDir = &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}
		}), cachev1.WayStartedEmpty, "item memory 64 → 128 MiB", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := Plan(tc.from, tc.to)
			if plan.Way != tc.way {
				t.Errorf("way = %q (%s), want %q", plan.Way, plan.Why, tc.way)
			}
			if (tc.why == "") != (plan.Why == "") || !strings.Contains(plan.Why, tc.why) {
				t.Errorf("why the servers start empty = %q, want one with %q", plan.Why, tc.why)
			}
			if tc.change != "" && !strings.Contains(plan.What(), tc.change) {
				t.Errorf("change = %q, want one with %q", plan.What(), tc.change)
			}
		})
	}
}

// A pod's labels and annotations move from the template before to the one after, and keep what
// others wrote on the pod.
func TestMetadata(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"controller-revision-hash": "r1", "team": "a", "old": "x"},
		Annotations: map[string]string{"keep": "1"}}}
	from := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "a", "old": "x"}}}
	to := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "b", "new": "y"}}}
	podLabels, podAnnotations, changed := Metadata(p, from, to)
	want := map[string]string{"controller-revision-hash": "r1", "team": "b", "new": "y"}
	if !changed || !maps.Equal(podLabels, want) || !maps.Equal(podAnnotations, map[string]string{"keep": "1"}) {
		t.Errorf("Metadata = %v, %v, %v; want %v", podLabels, podAnnotations, changed, want)
	}
	if p.Labels["team"] != "a" {
		t.Error("Metadata changed the pod's own map")
	}
	p.Labels = podLabels
	if _, _, changed := Metadata(p, from, to); changed {
		t.Error("a pod that has the labels after needs them written again")
	}
}

// A memory change says what it changes, in words.
func TestMemoryWhat(t *testing.T) {
	for _, tc := range []struct {
		m    cachev1.MemoryChange
		want string
	}{
		{cachev1.MemoryChange{FromMB: 64, ToMB: 128, FromLimit: "96Mi", ToLimit: "160Mi"}, "item memory 64 → 128 MiB, container memory 96Mi → 160Mi"},
		{cachev1.MemoryChange{FromMB: 64, ToMB: 64, FromLimit: "96Mi", ToLimit: "200Mi"}, "container memory 96Mi → 200Mi"},
		{cachev1.MemoryChange{FromMB: 64, ToMB: 64, FromLimit: "96Mi", ToLimit: "96Mi"}, "container resources"},
	} {
		if got := MemoryWhat(&tc.m); got != tc.want {
			t.Errorf("MemoryWhat(%+v) = %q, want %q", tc.m, got, tc.want)
		}
	}
}
