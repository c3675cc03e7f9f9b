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
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/kubectl/pkg/util/qos"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/labels"
)

// Change is how a change of the servers' template is made (the table in doc.go).
type Change struct {
	// Way is cachev1.WayInPlace, WayWarmRestart or WayStartedEmpty; "" when nothing changes.
	Way string
	// Why says why the servers start empty (WayStartedEmpty).
	Why string
	// Metadata: the pods' labels or annotations change.
	Metadata bool
	// Memory: memcached's -m or its container's resources change (Before → After).
	Memory        bool
	Before, After Memory
	// Images are the new image of each container whose image changes.
	Images map[string]string
	// FromVersion, ToVersion are memcached's versions before and after (its image's tag).
	FromVersion, ToVersion string
}

// RestartsMemcached says whether the change restarts memcached in its pod (its image changes).
func (c Change) RestartsMemcached() bool {
	_, ok := c.Images[labels.ChartName]
	return ok
}

// What says in words what the change changes.
func (c Change) What() string {
	var parts []string
	if c.Metadata {
		parts = append(parts, "pod labels or annotations")
	}
	if c.RestartsMemcached() {
		parts = append(parts, fmt.Sprintf("memcached %s → %s", c.FromVersion, c.ToVersion))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Images)) {
		if name != labels.ChartName {
			parts = append(parts, fmt.Sprintf("the %s's image", name))
		}
	}
	if c.Memory {
		parts = append(parts, MemoryWhat(c.MemoryChange()))
	}
	if len(parts) == 0 {
		return "the server template"
	}
	return strings.Join(parts, ", ")
}

// MemoryChange is the change's memory part as status.rollout keeps it; nil when it has none.
func (c Change) MemoryChange() *cachev1.MemoryChange {
	if !c.Memory {
		return nil
	}
	return &cachev1.MemoryChange{FromMB: c.Before.MB, ToMB: c.After.MB, FromLimit: c.Before.Limit(), ToLimit: c.After.Limit()}
}

// MemoryWhat says in words what a memory change changes.
func MemoryWhat(m *cachev1.MemoryChange) string {
	var parts []string
	if m.FromMB != m.ToMB {
		parts = append(parts, fmt.Sprintf("item memory %d → %d MiB", m.FromMB, m.ToMB))
	}
	if m.FromLimit != "" && m.ToLimit != "" && m.FromLimit != m.ToLimit {
		parts = append(parts, fmt.Sprintf("container memory %s → %s", m.FromLimit, m.ToLimit))
	}
	if len(parts) == 0 {
		parts = append(parts, "container resources") // cpu, or a memory request: resized in place alike
	}
	return strings.Join(parts, ", ")
}

// Plan decides how the change of the servers' template from → to is made (the table in doc.go).
// It reads only the two templates: what the cluster and the servers allow (pods/resize served,
// the rollout complete, memory memcached holds) is checked by the caller.
func Plan(from, to *corev1.PodTemplateSpec) Change {
	c := Change{Images: map[string]string{}, FromVersion: TemplateVersion(*from), ToVersion: TemplateVersion(*to)}
	strip := func(t *corev1.PodTemplateSpec) (*corev1.PodTemplateSpec, Memory, bool) {
		t = t.DeepCopy()
		m, ok := MemoryOf(&t.Spec)
		if !ok {
			return nil, m, false
		}
		t.Labels, t.Annotations = nil, nil
		mc := MemcachedContainer(&t.Spec)
		mc.Args[itemMemoryArg(mc.Args)] = ""
		mc.Resources = corev1.ResourceRequirements{} // resized in place; other containers' are not
		for i := range t.Spec.Containers {
			t.Spec.Containers[i].Image = ""
		}
		return t, m, true
	}
	a, before, ok1 := strip(from)
	b, after, ok2 := strip(to)
	c.Before, c.After = before, after
	c.Memory = ok1 && ok2 && (before.MB != after.MB || !equality.Semantic.DeepEqual(before.Resources, after.Resources))
	emptyStart := func(why string) Change {
		c.Way, c.Why = cachev1.WayStartedEmpty, why
		return c
	}
	if !ok1 || !ok2 {
		return emptyStart("the server template has no memcached container with -m")
	}
	warm := WarmTemplate(to)
	switch {
	case WarmTemplate(from) != warm && warm:
		return emptyStart("memcached's memory file is added (keepCacheAcross Restarts): each server starts with it empty once, and restarts with its items from then on")
	case WarmTemplate(from) != warm:
		return emptyStart("memcached's memory file is removed (keepCacheAcross MemoryChanges): memcached cannot restore its items without it")
	case warm && before.MB != after.MB:
		// (The memory file's volume is sized by -m too.)
		return emptyStart(fmt.Sprintf("item memory %d → %d MiB: memcached restores its items only into the item memory it saved them from (keepCacheAcross Restarts)", before.MB, after.MB))
	case !equality.Semantic.DeepEqual(a, b):
		return emptyStart(beyondInPlace(a, b))
	}
	c.Metadata = !equality.Semantic.DeepEqual(from.Labels, to.Labels) || !equality.Semantic.DeepEqual(from.Annotations, to.Annotations)
	for i := range to.Spec.Containers {
		ct := &to.Spec.Containers[i]
		if was := ContainerNamed(&from.Spec, ct.Name); was != nil && was.Image != ct.Image {
			c.Images[ct.Name] = ct.Image
		}
	}
	if !warm && c.RestartsMemcached() {
		return emptyStart(fmt.Sprintf("memcached %s → %s restarts memcached, and without its memory file (keepCacheAcross MemoryChanges) a restarted memcached is empty", c.FromVersion, c.ToVersion))
	}
	if c.Memory {
		if was, will := qos.ComputePodQOS(&corev1.Pod{Spec: from.Spec}), qos.ComputePodQOS(&corev1.Pod{Spec: to.Spec}); was != will {
			return emptyStart(fmt.Sprintf("the change moves the servers from QoS class %s to %s, which Kubernetes cannot change in place", was, will))
		}
	}
	switch {
	case c.RestartsMemcached():
		c.Way = cachev1.WayWarmRestart
	case c.Metadata || c.Memory || len(c.Images) > 0:
		c.Way = cachev1.WayInPlace
	}
	return c
}

// beyondInPlace says what part of two templates that differ beyond what a running pod can take
// (labels, annotations, images, resources, memcached's -m) differs.
func beyondInPlace(a, b *corev1.PodTemplateSpec) string {
	ca, cb := MemcachedContainer(&a.Spec), MemcachedContainer(&b.Spec)
	if !equality.Semantic.DeepEqual(ca.Args, cb.Args) || !equality.Semantic.DeepEqual(ca.Command, cb.Command) {
		return "memcached's flags change, and a running container's flags cannot"
	}
	return "the change is to the pod's spec beyond labels, annotations, images and resources, which Kubernetes cannot change in a running pod"
}
