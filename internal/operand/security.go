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

package operand

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
)

// UID memcached runs as outside OpenShift (the official image's "memcache" user). On OpenShift
// the restricted SCC assigns a UID from the namespace's range, so none is fixed there.
const UID int64 = 11211

// Platform is what the operator knows about the cluster it runs on.
type Platform struct {
	// OpenShift is true when the cluster serves security.openshift.io/v1 (SCCs).
	OpenShift bool
}

// DetectPlatform asks the API server's discovery, the same test the chart makes with
// .Capabilities.APIVersions.Has "security.openshift.io/v1".
func DetectPlatform(_ context.Context, dc discovery.DiscoveryInterface) (Platform, error) {
	groups, err := dc.ServerGroups()
	if err != nil {
		return Platform{}, fmt.Errorf("discover API groups: %w", err)
	}
	for _, g := range groups.Groups {
		if g.Name != "security.openshift.io" {
			continue
		}
		for _, v := range g.Versions {
			if v.Version == "v1" {
				return Platform{OpenShift: true}, nil
			}
		}
	}
	return Platform{}, nil
}

// PodSecurityContext is the restricted pod security context of memcached pods.
func (p Platform) PodSecurityContext() *corev1.PodSecurityContext {
	sc := &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if !p.OpenShift {
		sc.RunAsUser = ptr.To(UID)
		sc.RunAsGroup = ptr.To(UID)
	}
	return sc
}

// ContainerSecurityContext is the restricted security context of memcached containers.
func ContainerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}
