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
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/example/memcached-operator/internal/labels"
	"github.com/example/memcached-operator/internal/operand"
)

// A server's memory and images as its pod spec or the release's template says them.

// MemoryFileArg is memcached's flag of its memory file (keepCacheAcross Restarts).
const MemoryFileArg = "-e"

// MemoryCopyVolume is the volume that keeps a copy of a server's memory file across its pods
// (persistence): the StatefulSet's volume claim template, which names the pod's volume of it.
const MemoryCopyVolume = "memory-copy"

// KeepsMemoryCopy says whether a pod keeps a copy of its memcached's memory file on a volume of
// its server's own (persistence): a new pod of its server may restore it.
func KeepsMemoryCopy(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Name == MemoryCopyVolume && v.PersistentVolumeClaim != nil
	})
}

// Memory is what a memory change changes: memcached's -m, in MiB, and its container's
// resources.
type Memory struct {
	MB        int32
	Resources corev1.ResourceRequirements
}

// Limit is the container's memory limit, as a quantity's string, or "".
func (m Memory) Limit() string {
	if q, ok := m.Resources.Limits[corev1.ResourceMemory]; ok {
		return q.String()
	}
	return ""
}

// MemcachedContainer is the memcached container of a pod spec, or nil.
func MemcachedContainer(spec *corev1.PodSpec) *corev1.Container {
	return ContainerNamed(spec, labels.ChartName)
}

// ContainerNamed is the container of a pod spec with that name, or nil.
func ContainerNamed(spec *corev1.PodSpec, name string) *corev1.Container {
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	return nil
}

// itemMemoryArg is the index in args of the value of memcached's -m, as the chart writes it (two
// arguments), or -1.
func itemMemoryArg(args []string) int {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-m" {
			return i + 1
		}
	}
	return -1
}

// MemoryOf is the memory of the memcached container of a pod spec; false when the spec has none
// the chart made.
func MemoryOf(spec *corev1.PodSpec) (Memory, bool) {
	c := MemcachedContainer(spec)
	if c == nil {
		return Memory{}, false
	}
	i := itemMemoryArg(c.Args)
	if i < 0 {
		return Memory{}, false
	}
	mb, err := strconv.ParseInt(c.Args[i], 10, 32)
	if err != nil {
		return Memory{}, false
	}
	return Memory{MB: int32(mb), Resources: WithDefaultRequests(c.Resources)}, true
}

// WithDefaultRequests are resources as the API server keeps them for a pod: a limit without a
// request is its request too. (A pod template keeps them as written; its pods do not.)
func WithDefaultRequests(r corev1.ResourceRequirements) corev1.ResourceRequirements {
	r = *r.DeepCopy()
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			r.Requests[name] = q.DeepCopy()
		}
	}
	return r
}

// WarmTemplate says whether a pod template runs memcached with its memory file.
func WarmTemplate(t *corev1.PodTemplateSpec) bool {
	c := MemcachedContainer(&t.Spec)
	return c != nil && slices.Contains(c.Args, MemoryFileArg)
}

// TemplateVersion is the memcached version a pod template runs (its image's tag, or the image).
func TemplateVersion(template corev1.PodTemplateSpec) string {
	c := MemcachedContainer(&template.Spec)
	if c == nil {
		return ""
	}
	if img, err := operand.ParseImage(c.Image); err == nil {
		return operand.Version(img)
	}
	return c.Image
}
