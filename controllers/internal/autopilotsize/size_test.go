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

package autopilotsize

import (
	"reflect"
	"strings"
	"testing"
	"time"

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
			if err := IntoValues(obj, vals); err != nil {
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
	b := BoundsOf(&cachev1.MemcachedSpec{ReplicaCount: ptr.To[int32](3), Autoscaling: &cachev1.AutoscalingSpec{Enabled: ptr.To(true)}})
	if b.MinReplicas != 3 || b.MaxReplicas != 3 || b.FloorMB != 64 || b.MaxMB != 64 || b.Evictions != 1 || b.BelowPercent != 40 ||
		b.ScaleUpAfter != 2*time.Minute || b.ScaleInAfter != 30*time.Minute || b.CoolDown != 5*time.Minute || b.Invalid != "" {
		t.Errorf("defaults: %+v", b)
	}
	if b := BoundsOf(&cachev1.MemcachedSpec{Memcached: &cachev1.MemcachedServer{MaxMemoryMB: 128},
		Autoscaling: &cachev1.AutoscalingSpec{Enabled: ptr.To(true), MaxMemoryMB: ptr.To[int32](64)}}); !strings.Contains(b.Invalid, "maxMemoryMB 64 is below memcached.maxMemoryMB 128") {
		t.Errorf("maxMemoryMB below the spec's: %q", b.Invalid)
	}
	if b := BoundsOf(&cachev1.MemcachedSpec{ReplicaCount: ptr.To[int32](1), Autoscaling: &cachev1.AutoscalingSpec{Enabled: ptr.To(true), MinReplicas: ptr.To[int32](2)}}); !strings.Contains(b.Invalid, "minReplicas 2") {
		t.Errorf("minReplicas above replicaCount, no maxReplicas: %q", b.Invalid)
	}
}
