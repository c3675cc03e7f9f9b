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

package autopilot

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

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
