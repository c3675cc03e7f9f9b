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

// Package autopilotsize is the autopilot's bounds (spec.autoscaling with its defaults) and the
// size it chose, and how that size reaches the chart's values in place of the spec's: the values
// translation, the autopilot and the stats controller read it (docs/autopilot.md).
package autopilotsize

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/managercache"
)

// DefaultMaxMemoryMB is the chart's -m when the spec sets none (values.yaml).
const DefaultMaxMemoryMB = 64

// Bounds are what spec.autoscaling allows, with its defaults filled in.
type Bounds struct {
	MinReplicas, MaxReplicas int32
	// FloorMB is the spec's item memory, where the autopilot starts; MaxMB the most it grows to.
	FloorMB, MaxMB int32
	// Evictions per second, sustained for ScaleUpAfter, grow the cache.
	Evictions    float64
	ScaleUpAfter time.Duration
	// Use below BelowPercent, sustained for ScaleInAfter, shrinks it; one step per CoolDown.
	BelowPercent           int32
	ScaleInAfter, CoolDown time.Duration
	// Invalid says why the bounds allow no size (nothing else is then done); "" when they do.
	Invalid string
}

// On reports whether a Memcached's spec turns the autopilot on.
func On(spec *cachev1.MemcachedSpec) bool {
	return spec.Autoscaling != nil && spec.Autoscaling.Enabled != nil && *spec.Autoscaling.Enabled
}

// SpecMaxMemoryMB is the item memory the spec asks for (memoryLimitMB, its old name, wins).
func SpecMaxMemoryMB(spec *cachev1.MemcachedSpec) int32 {
	if m := spec.Memcached; m != nil {
		if m.MemoryLimitMB > 0 {
			return m.MemoryLimitMB
		}
		if m.MaxMemoryMB > 0 {
			return m.MaxMemoryMB
		}
	}
	return DefaultMaxMemoryMB
}

// BoundsOf reads spec.autoscaling; unset bounds are the spec's size.
func BoundsOf(spec *cachev1.MemcachedSpec) Bounds {
	as := spec.Autoscaling
	replicas := ptr.Deref(spec.ReplicaCount, 1)
	b := Bounds{
		MinReplicas: ptr.Deref(as.MinReplicas, replicas), MaxReplicas: ptr.Deref(as.MaxReplicas, replicas),
		FloorMB: SpecMaxMemoryMB(spec), Evictions: float64(max(as.ScaleUpEvictionsPerSecond, 1)),
		BelowPercent: as.ScaleInBelowPercent,
	}
	b.MaxMB = ptr.Deref(as.MaxMemoryMB, b.FloorMB)
	if spec.KeepCacheAcross == cachev1.KeepAcrossRestarts {
		// A server that restarts with its items keeps its item memory (memcached restores its
		// file only into the same -m): the autopilot adds servers instead. The values
		// translation refuses a larger maxMemoryMB (Irreconcilable); this holds meanwhile.
		b.MaxMB = min(b.MaxMB, b.FloorMB)
	}
	if b.BelowPercent == 0 {
		b.BelowPercent = 40
	}
	durations := []struct {
		value string
		def   time.Duration
		into  *time.Duration
	}{{as.ScaleUpAfter, 2 * time.Minute, &b.ScaleUpAfter}, {as.ScaleInAfter, 30 * time.Minute, &b.ScaleInAfter}, {as.CoolDown, 5 * time.Minute, &b.CoolDown}}
	for _, d := range durations {
		*d.into = d.def
		if v, err := time.ParseDuration(d.value); err == nil && v > 0 {
			*d.into = v
		}
	}
	switch {
	case b.MinReplicas > b.MaxReplicas:
		b.Invalid = fmt.Sprintf("autoscaling allows no number of servers: minReplicas %d (unset: replicaCount) is above maxReplicas %d (unset: replicaCount)", b.MinReplicas, b.MaxReplicas)
	case b.MaxMB < b.FloorMB:
		b.Invalid = fmt.Sprintf("autoscaling.maxMemoryMB %d is below memcached.maxMemoryMB %d, where the autopilot starts", b.MaxMB, b.FloorMB)
	}
	return b
}

// Of is the size the chart renders while the autopilot is on: its choice in status
// within the spec's bounds, or the spec's own size clamped to them before it has chosen; while
// the bounds allow no size, its choice as it is. ok is false when the autopilot is off, or its
// bounds allow no size and it has chosen none: the spec's size applies.
func Of(spec *cachev1.MemcachedSpec, st *cachev1.AutopilotStatus) (replicas, mb int32, ok bool) {
	if !On(spec) {
		return 0, 0, false
	}
	b := BoundsOf(spec)
	if b.Invalid != "" {
		if st != nil {
			return st.Replicas, st.MaxMemoryMB, true // kept until the bounds allow a size (decide)
		}
		return 0, 0, false
	}
	replicas, mb = ptr.Deref(spec.ReplicaCount, 1), b.FloorMB
	if st != nil {
		replicas, mb = st.Replicas, st.MaxMemoryMB
	}
	return min(max(replicas, b.MinReplicas), b.MaxReplicas), min(max(mb, b.FloorMB), b.MaxMB), true
}

// IntoValues puts the autopilot's size into a CR's chart values: replicaCount, memcached's
// item memory, and the container's memory in the spec's resources moved by as much as the item
// memory (the chart's default resources follow the item memory by themselves). The values'
// autoscaling, which the chart does not read, is dropped.
func IntoValues(obj *unstructured.Unstructured, vals map[string]any) error {
	delete(vals, "autoscaling")
	if on, _, _ := unstructured.NestedBool(obj.Object, "spec", "autoscaling", "enabled"); !on {
		return nil // most CRs: nothing to convert
	}
	spec, st, err := Inputs(obj)
	if err != nil {
		return err
	}
	replicas, mb, ok := Of(spec, st)
	if !ok {
		return nil
	}
	vals["replicaCount"] = int64(replicas)
	delta := int64(mb-SpecMaxMemoryMB(spec)) << 20
	if delta == 0 {
		return nil
	}
	mc, _ := vals["memcached"].(map[string]any)
	if mc == nil {
		mc = map[string]any{}
		vals["memcached"] = mc
	}
	delete(mc, "memoryLimitMB")
	mc["maxMemoryMB"] = int64(mb)
	for _, kind := range []string{"limits", "requests"} {
		amounts, _, _ := unstructured.NestedMap(vals, "resources", kind)
		v, ok := amounts["memory"]
		if !ok {
			continue
		}
		q, err := resource.ParseQuantity(fmt.Sprint(v))
		if err != nil {
			return fmt.Errorf("spec.resources.%s.memory: %w", kind, err)
		}
		q.Add(*resource.NewQuantity(delta, resource.BinarySI))
		if err := unstructured.SetNestedField(vals, q.String(), "resources", kind, "memory"); err != nil {
			return err
		}
	}
	return nil
}

// Inputs reads the spec and status.autopilot of a Memcached in its unstructured form.
func Inputs(obj *unstructured.Unstructured) (*cachev1.MemcachedSpec, *cachev1.AutopilotStatus, error) {
	spec := &cachev1.MemcachedSpec{}
	if raw, ok := obj.Object["spec"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, spec); err != nil {
			return nil, nil, fmt.Errorf("read the spec of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
		}
	}
	st, err := managercache.StatusOf(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("read the status of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return spec, st.Autopilot, nil
}
