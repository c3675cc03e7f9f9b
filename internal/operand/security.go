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
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
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
	// SleepAction is true when pods can sleep in a lifecycle hook without a command (Kubernetes
	// 1.30+; OKD 4.15 and 4.16 are 1.28 and 1.29).
	SleepAction bool
}

// DetectPlatform asks the API server's discovery, the same tests the chart makes with
// .Capabilities.APIVersions.Has "security.openshift.io/v1" and .Capabilities.KubeVersion.
func DetectPlatform(_ context.Context, dc discovery.DiscoveryInterface) (Platform, error) {
	var p Platform
	groups, err := dc.ServerGroups()
	if err != nil {
		return Platform{}, fmt.Errorf("discover API groups: %w", err)
	}
	for _, g := range groups.Groups {
		if g.Name == "security.openshift.io" && slices.ContainsFunc(g.Versions, func(v metav1.GroupVersionForDiscovery) bool { return v.Version == "v1" }) {
			p.OpenShift = true
		}
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return Platform{}, fmt.Errorf("discover the Kubernetes version: %w", err)
	}
	v, err := version.ParseGeneric(info.GitVersion)
	if err != nil {
		return Platform{}, fmt.Errorf("the API server's version %q: %w", info.GitVersion, err)
	}
	p.SleepAction = v.AtLeast(version.MajorMinor(1, 30))
	return p, nil
}

// PreStop keeps memcached up 5 s after it is told to stop, until the Service has dropped the pod
// (memcached exits at once on SIGTERM): the sleep action where the cluster has it, else the
// image's sleep command.
func (p Platform) PreStop() *corev1.LifecycleHandler {
	if p.SleepAction {
		return &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}
	}
	return &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "5"}}}
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
