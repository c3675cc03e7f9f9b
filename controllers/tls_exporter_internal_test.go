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
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// The exporter's loopback listener comes to servers made without it only with a rollout that
// replaces them anyway: a wrong yes replaces warm servers, each starting empty.
func TestLoopbackStats(t *testing.T) {
	servers := func(args []string, exporter bool, mutate func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{}
		s.Generation, s.Status.ObservedGeneration = 4, 4
		s.Status.CurrentRevision, s.Status.UpdateRevision = "servers-a", "servers-a"
		s.Spec.Template.Spec.Containers = []corev1.Container{{Name: "memcached", Args: append([]string{"-p", "11211", "-m", "64"}, args...)}}
		if exporter {
			s.Spec.Template.Spec.Containers = append(s.Spec.Template.Spec.Containers, corev1.Container{Name: "exporter"})
		}
		if mutate != nil {
			mutate(s)
		}
		return s
	}
	tlsArgs := []string{"-Z", "-o", "ssl_chain_cert=/etc/memcached/tls/tls.crt"}
	legacy := func(mutate func(*appsv1.StatefulSet)) *appsv1.StatefulSet { return servers(tlsArgs, true, mutate) }
	rollingTo := func(s *appsv1.StatefulSet) { s.Status.UpdateRevision = "servers-b" }
	unobserved := func(s *appsv1.StatefulSet) { s.Generation = 5 }
	held := func(s *appsv1.StatefulSet) {
		rollingTo(s)
		s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](3)}
	}
	status := func(deployed int32, c *cachev1.ServersChange) cachev1.MemcachedStatus {
		st := cachev1.MemcachedStatus{DeployedRelease: &cachev1.HelmRelease{Revision: deployed}}
		if c != nil {
			st.Rollout = &cachev1.RolloutStatus{Change: c}
		}
		return st
	}
	rolledOut := func(from int32) *cachev1.ServersChange {
		return &cachev1.ServersChange{Way: cachev1.WayStartedEmpty, Phase: cachev1.RolloutRolledOut, FromRelease: from}
	}
	for _, tt := range []struct {
		name string
		st   cachev1.MemcachedStatus
		live *appsv1.StatefulSet
		want bool
	}{
		{"no servers yet", status(0, nil), nil, true},
		{"servers with the listener", status(7, nil), servers(append(tlsArgs, "-l", "notls:127.0.0.1:11212,*"), true, nil), true},
		{"servers without TLS: turning it on replaces them", status(7, nil), servers(nil, true, nil), true},
		{"servers without exporter: turning metrics on replaces them", status(7, nil), servers(tlsArgs, false, nil), true},
		{"servers without the listener, settled", status(7, nil), legacy(nil), false},
		{"a rollout decided for the release deployed, rolling", status(7, rolledOut(6)), legacy(rollingTo), true},
		{"a rollout decided for the release being applied, its spec not seen yet", status(7, rolledOut(7)), legacy(unobserved), true},
		{"a rollout decided for the release deployed, done", status(7, rolledOut(6)), legacy(nil), false},
		{"a rollout of an older release, while something else rolls", status(9, rolledOut(6)), legacy(rollingTo), false},
		{"a change in place, its rollout held", status(7, &cachev1.ServersChange{Way: cachev1.WayInPlace, Phase: cachev1.RolloutChanging, FromRelease: 6}), legacy(held), false},
		{"a warm restart", status(7, &cachev1.ServersChange{Way: cachev1.WayWarmRestart, Phase: cachev1.RolloutChanging, FromRelease: 6}), legacy(rollingTo), false},
		{"a rolled-out record while the StatefulSet is held again", status(7, rolledOut(6)), legacy(held), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := loopbackStats(tt.st, tt.live); got != tt.want {
				t.Errorf("loopbackStats = %v, want %v", got, tt.want)
			}
		})
	}
}
