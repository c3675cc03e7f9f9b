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

package servers

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
)

// ResizeSupport says whether the cluster resizes pods in place: whether its API server serves the
// pods/resize subresource (Kubernetes 1.33 and later with InPlacePodVerticalScaling, which is GA
// and always on from 1.35), read from discovery, not from the version, and again after
// resizeSupportTTL.
type ResizeSupport struct {
	discovery discovery.DiscoveryInterface
	mu        sync.Mutex
	served    bool
	checked   time.Time
}

const resizeSupportTTL = 10 * time.Minute

// NewResizeSupport asks discovery d whether the cluster resizes pods in place.
func NewResizeSupport(d discovery.DiscoveryInterface) *ResizeSupport {
	return &ResizeSupport{discovery: d}
}

func (s *ResizeSupport) inPlace() (bool, error) {
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
