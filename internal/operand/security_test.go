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

package operand_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/example/memcached-operator/internal/operand"
)

// The operator takes the cluster for OpenShift when it serves security.openshift.io/v1, and uses
// the sleep action from 1.30 on, as the chart does.
func TestDetectPlatform(t *testing.T) {
	for _, tt := range []struct {
		name      string
		version   string
		resources []*metav1.APIResourceList
		want      operand.Platform
	}{
		{"OKD 4.15", "v1.28.15+f6e1d8e", []*metav1.APIResourceList{{GroupVersion: "apps/v1"}, {GroupVersion: "security.openshift.io/v1"}}, operand.Platform{OpenShift: true}},
		{"OKD 4.17", "v1.30.4", []*metav1.APIResourceList{{GroupVersion: "security.openshift.io/v1"}}, operand.Platform{OpenShift: true, SleepAction: true}},
		{"Kubernetes 1.29", "v1.29.0", nil, operand.Platform{}},
		{"Kubernetes 1.35", "v1.35.4", []*metav1.APIResourceList{{GroupVersion: "apps/v1"}}, operand.Platform{SleepAction: true}},
		{"another version of the SCC group", "v1.35.4", []*metav1.APIResourceList{{GroupVersion: "security.openshift.io/v2"}}, operand.Platform{SleepAction: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: tt.resources}, FakedServerVersion: &version.Info{GitVersion: tt.version}}
			got, err := operand.DetectPlatform(context.Background(), dc)
			if err != nil || got != tt.want {
				t.Errorf("DetectPlatform = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
