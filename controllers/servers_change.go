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
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/kubectl/pkg/util/qos"

	"github.com/example/memcached-operator/internal/labels"
)

// How a change of the servers' pod template is made: the decision, from the template before and
// after alone (docs/upgrades.md, "What keeps the cache warm"). The mechanics, holding the
// StatefulSet's rollout and changing each running server, are in memcached_resize.go.
//
// Kubernetes changes a running pod's labels, annotations, container images and resources without
// replacing it; memcached keeps its items over a restart of its container only with its memory
// file (spec.keepCacheAcross Restarts, the -e flag), and changes its item memory at runtime only
// without it. So:
//
//	change                        MemoryChanges (no -e)        Restarts (-e)
//	pod labels, annotations       InPlace                      InPlace
//	memcached's resources         InPlace (pods/resize)        InPlace (pods/resize)
//	item memory (-m)              InPlace (+ cache_memlimit)   StartedEmpty (rolled out)
//	memcached's image             StartedEmpty (rolled out)    WarmRestart
//	the exporter's image          InPlace (it restarts alone)  InPlace
//	anything else, or the mode    StartedEmpty (rolled out)    StartedEmpty (rolled out)

// Ways a change of the servers is made: the reasons of the CacheWarm condition.
const (
	// WayInPlace: written onto the running servers, no memcached restarted.
	WayInPlace = "InPlace"
	// WayWarmRestart: each server's memcached restarted in its pod, one at a time, with its items.
	WayWarmRestart = "WarmRestart"
	// WayStartedEmpty: the servers rolled out (each a new pod), or a server restarted without
	// its items: each such server started empty.
	WayStartedEmpty = "StartedEmpty"
)

// ConditionCacheWarm says whether the servers kept their items through the last change the
// operator made to them and since: True (InPlace, WarmRestart), False (StartedEmpty: which server
// and why).
const ConditionCacheWarm = "CacheWarm"

// memoryFileArg is memcached's flag of its memory file (keepCacheAcross Restarts).
const memoryFileArg = "-e"

// templatePlan is how a change of the servers' template is made.
type templatePlan struct {
	// way is WayInPlace, WayWarmRestart or WayStartedEmpty; "" when nothing changes.
	way string
	// why says why the servers start empty (WayStartedEmpty).
	why string
	// metadata: the pods' labels or annotations change.
	metadata bool
	// memory: memcached's -m or its container's resources change (before → after).
	memory        bool
	before, after serverMemory
	// images are the new image of each container whose image changes.
	images map[string]string
	// fromVersion, toVersion are memcached's versions before and after (its image's tag).
	fromVersion, toVersion string
}

// restartsMemcached says whether the plan restarts memcached in its pod (its image changes).
func (p templatePlan) restartsMemcached() bool {
	_, ok := p.images[labels.ChartName]
	return ok
}

// change says in words what the plan changes.
func (p templatePlan) change() string {
	var parts []string
	if p.metadata {
		parts = append(parts, "pod labels or annotations")
	}
	if p.restartsMemcached() {
		parts = append(parts, fmt.Sprintf("memcached %s → %s", p.fromVersion, p.toVersion))
	}
	for _, c := range slices.Sorted(maps.Keys(p.images)) {
		if c != labels.ChartName {
			parts = append(parts, fmt.Sprintf("the %s's image", c))
		}
	}
	if p.memory {
		parts = append(parts, resizeRecord{FromMB: p.before.MB, ToMB: p.after.MB, FromLimit: p.before.limit(), ToLimit: p.after.limit()}.change())
	}
	if len(parts) == 0 {
		return "the server template"
	}
	return strings.Join(parts, ", ")
}

// warmTemplate says whether a pod template runs memcached with its memory file.
func warmTemplate(t *corev1.PodTemplateSpec) bool {
	c := memcachedContainer(&t.Spec)
	return c != nil && slices.Contains(c.Args, memoryFileArg)
}

// planTemplateChange decides how the change of the servers' template from → to is made (see the
// table above). It reads only the two templates: what the cluster and the servers allow (pods/resize
// served, the rollout complete, memory memcached holds) is checked before the change is held.
func planTemplateChange(from, to *corev1.PodTemplateSpec) templatePlan {
	plan := templatePlan{images: map[string]string{}, fromVersion: templateVersion(*from), toVersion: templateVersion(*to)}
	strip := func(t *corev1.PodTemplateSpec) (*corev1.PodTemplateSpec, serverMemory, bool) {
		t = t.DeepCopy()
		m, ok := memoryOf(&t.Spec)
		if !ok {
			return nil, m, false
		}
		t.Labels, t.Annotations = nil, nil
		c := memcachedContainer(&t.Spec)
		c.Args[itemMemoryArg(c.Args)] = ""
		c.Resources = corev1.ResourceRequirements{} // resized in place; other containers' are not
		for i := range t.Spec.Containers {
			t.Spec.Containers[i].Image = ""
		}
		return t, m, true
	}
	a, before, ok1 := strip(from)
	b, after, ok2 := strip(to)
	plan.before, plan.after = before, after
	plan.memory = ok1 && ok2 && (before.MB != after.MB || !equality.Semantic.DeepEqual(before.Resources, after.Resources))
	emptyStart := func(why string) templatePlan {
		plan.way, plan.why = WayStartedEmpty, why
		return plan
	}
	if !ok1 || !ok2 {
		return emptyStart("the server template has no memcached container with -m")
	}
	warm := warmTemplate(to)
	switch {
	case warmTemplate(from) != warm && warm:
		return emptyStart("memcached's memory file is added (keepCacheAcross Restarts): each server starts with it empty once, and restarts with its items from then on")
	case warmTemplate(from) != warm:
		return emptyStart("memcached's memory file is removed (keepCacheAcross MemoryChanges): memcached cannot restore its items without it")
	case warm && before.MB != after.MB:
		// (The memory file's volume is sized by -m too.)
		return emptyStart(fmt.Sprintf("item memory %d → %d MiB: memcached restores its items only into the item memory it saved them from (keepCacheAcross Restarts)", before.MB, after.MB))
	case !equality.Semantic.DeepEqual(a, b):
		return emptyStart(beyondInPlace(a, b))
	}
	plan.metadata = !equality.Semantic.DeepEqual(from.Labels, to.Labels) || !equality.Semantic.DeepEqual(from.Annotations, to.Annotations)
	for i := range to.Spec.Containers {
		c := &to.Spec.Containers[i]
		if was := containerNamed(&from.Spec, c.Name); was != nil && was.Image != c.Image {
			plan.images[c.Name] = c.Image
		}
	}
	switch {
	case !warm && plan.restartsMemcached():
		return emptyStart(fmt.Sprintf("memcached %s → %s restarts memcached, and without its memory file (keepCacheAcross MemoryChanges) a restarted memcached is empty", plan.fromVersion, plan.toVersion))
	}
	if plan.memory {
		if was, will := qos.ComputePodQOS(&corev1.Pod{Spec: from.Spec}), qos.ComputePodQOS(&corev1.Pod{Spec: to.Spec}); was != will {
			return emptyStart(fmt.Sprintf("the change moves the servers from QoS class %s to %s, which Kubernetes cannot change in place", was, will))
		}
	}
	switch {
	case plan.restartsMemcached():
		plan.way = WayWarmRestart
	case plan.metadata || plan.memory || len(plan.images) > 0:
		plan.way = WayInPlace
	}
	return plan
}

// beyondInPlace says what part of two templates that differ beyond what a running pod can take
// (labels, annotations, images, resources, memcached's -m) differs.
func beyondInPlace(a, b *corev1.PodTemplateSpec) string {
	ca, cb := memcachedContainer(&a.Spec), memcachedContainer(&b.Spec)
	if !equality.Semantic.DeepEqual(ca.Args, cb.Args) || !equality.Semantic.DeepEqual(ca.Command, cb.Command) {
		return "memcached's flags change, and a running container's flags cannot"
	}
	return "the change is to the pod's spec beyond labels, annotations, images and resources, which Kubernetes cannot change in a running pod"
}

// containerNamed is the container of a pod spec with that name, or nil.
func containerNamed(spec *corev1.PodSpec, name string) *corev1.Container {
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	return nil
}
