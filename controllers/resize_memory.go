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
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"

	"github.com/example/memcached-operator/internal/helm"
	"github.com/example/memcached-operator/internal/labels"
)

// A server's memory as its pod spec and the release's manifest say it, and whether the cluster
// resizes pods in place (see memcached_resize.go).

// serverMemory is what a memory change changes: memcached's -m, in MiB, and its container's
// resources.
type serverMemory struct {
	MB        int32
	Resources corev1.ResourceRequirements
}

func (m serverMemory) limit() string {
	if q, ok := m.Resources.Limits[corev1.ResourceMemory]; ok {
		return q.String()
	}
	return ""
}

// memcachedContainer is the memcached container of a pod spec, or nil.
func memcachedContainer(spec *corev1.PodSpec) *corev1.Container {
	for i := range spec.Containers {
		if spec.Containers[i].Name == labels.ChartName {
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

// memoryOf is the memory of the memcached container of a pod spec; false when the spec has none
// the chart made.
func memoryOf(spec *corev1.PodSpec) (serverMemory, bool) {
	c := memcachedContainer(spec)
	if c == nil {
		return serverMemory{}, false
	}
	i := itemMemoryArg(c.Args)
	if i < 0 {
		return serverMemory{}, false
	}
	mb, err := strconv.ParseInt(c.Args[i], 10, 32)
	if err != nil {
		return serverMemory{}, false
	}
	return serverMemory{MB: int32(mb), Resources: withDefaultRequests(c.Resources)}, true
}

// withDefaultRequests are resources as the API server keeps them for a pod: a limit without a
// request is its request too. (A pod template keeps them as written; its pods do not.)
func withDefaultRequests(r corev1.ResourceRequirements) corev1.ResourceRequirements {
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

// manifestOf is a release's manifest, or "" for none.
func manifestOf(rel *helm.Rendered) string {
	if rel == nil {
		return ""
	}
	return rel.Manifest
}

// statefulSetOf is the StatefulSet of a release manifest (the chart renders one), or nil.
func statefulSetOf(manifest string) *appsv1.StatefulSet {
	if s := helm.ObjectsOf[appsv1.StatefulSet](manifest, "apps/v1", "StatefulSet"); len(s) > 0 {
		return s[0]
	}
	return nil
}

// resizeSupport says whether the cluster resizes pods in place: whether its API server serves the
// pods/resize subresource (Kubernetes 1.33 and later with InPlacePodVerticalScaling, which is GA
// and always on from 1.35), read from discovery, not from the version, and again after
// resizeSupportTTL.
type resizeSupport struct {
	discovery discovery.DiscoveryInterface
	mu        sync.Mutex
	served    bool
	checked   time.Time
}

const resizeSupportTTL = 10 * time.Minute

func (s *resizeSupport) inPlace() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.checked.IsZero() && time.Since(s.checked) < resizeSupportTTL {
		return s.served, nil
	}
	list, err := s.discovery.ServerResourcesForGroupVersion("v1")
	if err != nil {
		return false, fmt.Errorf("discover the resources of API v1: %w", err)
	}
	s.served = false
	for _, r := range list.APIResources {
		if r.Name == "pods/resize" {
			s.served = true
		}
	}
	s.checked = time.Now()
	return s.served, nil
}

// errNoResize says why a cluster gets the rollout.
const errNoResize = "this cluster does not resize pods in place: its API server does not serve pods/resize (Kubernetes before 1.33, or InPlacePodVerticalScaling off)"
