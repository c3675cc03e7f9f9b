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
*/package memcachedstatus

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// A condition's lastTransitionTime moves when its status changes, not when its reason or message does.
func TestSetCondition(t *testing.T) {
	long := metav1.NewTime(time.Now().Add(-time.Hour))
	st := &cachev1.MemcachedStatus{Conditions: []cachev1.HelmCondition{
		{Type: cachev1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "PodsAvailable", LastTransitionTime: long},
		{Type: cachev1.ConditionScalingLimited, Status: metav1.ConditionFalse},
	}}
	SetCondition(st, cachev1.ConditionAvailable, metav1.ConditionTrue, "Other", "said again")
	if c := Condition(*st, cachev1.ConditionAvailable); c.Reason != "Other" || c.Message != "said again" || !c.LastTransitionTime.Equal(&long) {
		t.Errorf("the same status said again: %+v, want its reason and message, its transition time kept", c)
	}
	SetCondition(st, cachev1.ConditionAvailable, metav1.ConditionFalse, "PodsUnavailable", "0 of 1 server is available")
	if c := Condition(*st, cachev1.ConditionAvailable); c.Status != metav1.ConditionFalse || !long.Before(&c.LastTransitionTime) {
		t.Errorf("a new status: %+v, want False with a new transition time", c)
	}
	SetCondition(st, cachev1.ConditionCacheWarm, metav1.ConditionTrue, cachev1.WayInPlace, "")
	RemoveCondition(st, cachev1.ConditionScalingLimited)
	if len(st.Conditions) != 2 || Condition(*st, cachev1.ConditionScalingLimited).Type != "" || Condition(*st, cachev1.ConditionCacheWarm).LastTransitionTime.Time.IsZero() {
		t.Errorf("after adding CacheWarm and removing ScalingLimited: %+v", st.Conditions)
	}
}
