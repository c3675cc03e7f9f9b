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

package memcachedstatus

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// Condition is the condition of type typ, or an empty one.
func Condition(st cachev1.MemcachedStatus, typ string) cachev1.HelmCondition {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return cachev1.HelmCondition{}
}

// SetCondition sets a condition, moving its lastTransitionTime only when its status changes.
func SetCondition(st *cachev1.MemcachedStatus, typ string, status metav1.ConditionStatus, reason, msg string) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != typ {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = metav1.Now()
		}
		c.Status, c.Reason, c.Message = status, reason, msg
		return
	}
	st.Conditions = append(st.Conditions, cachev1.HelmCondition{
		Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.Now(),
	})
}

// RemoveCondition removes a condition.
func RemoveCondition(st *cachev1.MemcachedStatus, typ string) {
	out := st.Conditions[:0]
	for _, c := range st.Conditions {
		if c.Type != typ {
			out = append(out, c)
		}
	}
	st.Conditions = out
}
