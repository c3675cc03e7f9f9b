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
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// The chart renders the autopilot's choice in place of the spec's size, within the spec's bounds,
// and the spec's size when the autopilot is off or its bounds allow none.
func TestValuesTakeTheAutopilotsSize(t *testing.T) {
	for _, tc := range []struct {
		name, spec, status string
		want               map[string]any // the values' size fields, by path
	}{
		{"autopilot off: the spec's size", `{replicaCount: 2, memcached: {maxMemoryMB: 64}}`, `{autopilot: {replicas: 5, maxMemoryMB: 512}}`,
			map[string]any{"replicaCount": int64(2), "memcached.maxMemoryMB": int64(64)}},
		{"on, nothing chosen yet: the spec's size within the bounds", `{replicaCount: 1, autoscaling: {enabled: true, minReplicas: 2, maxReplicas: 4}}`, `{}`,
			map[string]any{"replicaCount": int64(2), "memcached.maxMemoryMB": nil}},
		{"on: its choice, the container's memory moved by as much as the item memory", `{replicaCount: 2, memcached: {maxMemoryMB: 64}, resources: {limits: {memory: 200Mi}, requests: {memory: 150Mi, cpu: 100m}},
			autoscaling: {enabled: true, maxReplicas: 4, maxMemoryMB: 256}}`, `{autopilot: {replicas: 3, maxMemoryMB: 128}}`,
			map[string]any{"replicaCount": int64(3), "memcached.maxMemoryMB": int64(128), "resources.limits.memory": "264Mi", "resources.requests.memory": "214Mi", "resources.requests.cpu": "100m"}},
		{"on, with the old name of maxMemoryMB: the new one wins", `{memcached: {memoryLimitMB: 32}, autoscaling: {enabled: true, maxMemoryMB: 64}}`, `{autopilot: {replicas: 1, maxMemoryMB: 64}}`,
			map[string]any{"memcached.maxMemoryMB": int64(64), "memcached.memoryLimitMB": nil}},
		{"bounds lowered below the choice: the bounds win", `{replicaCount: 1, memcached: {maxMemoryMB: 64}, autoscaling: {enabled: true, maxReplicas: 2, maxMemoryMB: 96}}`,
			`{autopilot: {replicas: 5, maxMemoryMB: 256}}`, map[string]any{"replicaCount": int64(2), "memcached.maxMemoryMB": int64(96)}},
		{"bounds that allow no size, nothing chosen: the spec's size", `{replicaCount: 3, autoscaling: {enabled: true, minReplicas: 4}}`, `{}`,
			map[string]any{"replicaCount": int64(3)}},
		{"bounds that allow no size: its choice kept, no step back to the spec's size", `{replicaCount: 3, autoscaling: {enabled: true, minReplicas: 5, maxReplicas: 4}}`,
			`{autopilot: {replicas: 4, maxMemoryMB: 96}}`, map[string]any{"replicaCount": int64(4), "memcached.maxMemoryMB": int64(96)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]any{}}
			for field, raw := range map[string]string{"spec": tc.spec, "status": tc.status} {
				var m map[string]any
				if err := yaml.Unmarshal([]byte(raw), &m); err != nil {
					t.Fatal(err)
				}
				obj.Object[field] = m
			}
			obj.SetNamespace("ns")
			obj.SetName("m")
			vals := runtime.DeepCopyJSON(obj.Object["spec"].(map[string]any))
			if err := withAutopilotSize(obj, vals); err != nil {
				t.Fatal(err)
			}
			if _, ok := vals["autoscaling"]; ok {
				t.Error("the values keep autoscaling, which the chart does not read")
			}
			for path, want := range tc.want {
				got, found, _ := unstructured.NestedFieldNoCopy(vals, strings.Split(path, ".")...)
				if want == nil && !found {
					continue
				}
				if f, ok := got.(float64); ok { // YAML numbers; the API server's JSON gives int64
					got = int64(f)
				}
				if q, ok := got.(string); ok && want != nil {
					if a, b := resource.MustParse(q), resource.MustParse(want.(string)); a.Cmp(b) == 0 {
						continue
					}
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %v (%T), want %v", path, got, got, want)
				}
			}
		})
	}
}

// The bounds' defaults, and bounds that allow no size.
func TestAutopilotBounds(t *testing.T) {
	b := boundsOf(&cachev1.MemcachedSpec{ReplicaCount: ptr.To[int32](3), Autoscaling: &cachev1.AutoscalingSpec{Enabled: ptr.To(true)}})
	if b.minReplicas != 3 || b.maxReplicas != 3 || b.floorMB != 64 || b.maxMB != 64 || b.evictions != 1 || b.belowPercent != 40 ||
		b.scaleUpAfter != 2*time.Minute || b.scaleInAfter != 30*time.Minute || b.coolDown != 5*time.Minute || b.invalid != "" {
		t.Errorf("defaults: %+v", b)
	}
	if b := boundsOf(&cachev1.MemcachedSpec{Memcached: &cachev1.MemcachedServer{MaxMemoryMB: 128},
		Autoscaling: &cachev1.AutoscalingSpec{Enabled: ptr.To(true), MaxMemoryMB: ptr.To[int32](64)}}); !strings.Contains(b.invalid, "maxMemoryMB 64 is below memcached.maxMemoryMB 128") {
		t.Errorf("maxMemoryMB below the spec's: %q", b.invalid)
	}
	if b := boundsOf(&cachev1.MemcachedSpec{ReplicaCount: ptr.To[int32](1), Autoscaling: &cachev1.AutoscalingSpec{Enabled: ptr.To(true), MinReplicas: ptr.To[int32](2)}}); !strings.Contains(b.invalid, "minReplicas 2") {
		t.Errorf("minReplicas above replicaCount, no maxReplicas: %q", b.invalid)
	}
}

// Which ResourceQuotas count the memcached pods: a quota's scopes select pods by how they run.
func TestQuotaCovers(t *testing.T) {
	pod := &corev1.PodSpec{PriorityClassName: "cache"}
	for _, tc := range []struct {
		name   string
		scopes []corev1.ResourceQuotaScope
		sel    []corev1.ScopedResourceSelectorRequirement
		covers bool
	}{
		{"no scope", nil, nil, true},
		{"NotTerminating and NotBestEffort: long-running pods with requests", []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort}, nil, true},
		{"Terminating: pods with a deadline", []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}, nil, false},
		{"BestEffort: pods without requests", []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}, nil, false},
		{"their priority class", nil, []corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"cache", "web"}}}, true},
		{"another priority class", nil, []corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"web"}}}, false},
		{"pods without a priority class", nil, []corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpDoesNotExist}}, false},
	} {
		q := &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Scopes: tc.scopes}}
		if tc.sel != nil {
			q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: tc.sel}
		}
		if got := quotaCovers(q, pod); got != tc.covers {
			t.Errorf("%s: covers = %v, want %v", tc.name, got, tc.covers)
		}
	}
}

// What a pod counts against a quota: every container's requests and limits.
func TestPodAmounts(t *testing.T) {
	spec := &corev1.PodSpec{Containers: []corev1.Container{
		{Name: "memcached", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("96Mi")},
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("96Mi")}}},
		{Name: "exporter", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}},
	}}
	got := podAmounts(spec)
	for name, want := range map[corev1.ResourceName]string{"requests.cpu": "60m", "requests.memory": "128Mi", "limits.memory": "160Mi"} {
		if q := got[name]; q.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("%s = %s, want %s", name, q.String(), want)
		}
	}
}
