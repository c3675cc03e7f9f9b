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

package actionclient

import (
	"sync"

	"github.com/hashicorp/go-multierror"
	"helm.sh/helm/v3/pkg/kube"
)

// Create creates an install's objects in two rounds: every object no pod is made from, all at
// once, then the workloads, all at once. Helm creates one kind after another (its install order),
// a round trip per kind, six for the memcached chart, while an install holds a Helm worker; what
// that order is for holds with two rounds: whatever a pod uses or is governed by (its
// ServiceAccount, ConfigMap, NetworkPolicy, PodDisruptionBudget, Services) exists before the
// StatefulSet makes its first pod. As Helm does, a failed create does not stop the others, and
// the errors are returned together, in Helm's form (a multierror). Each object is created by
// Helm's own Create.
func (c kubeClient) Create(resources kube.ResourceList) (*kube.Result, error) {
	if len(resources) == 0 {
		return c.Client.Create(resources) // Helm's error for an empty manifest
	}
	var first, workloads kube.ResourceList
	for _, info := range resources {
		if makesPods(info.Object.GetObjectKind().GroupVersionKind().Kind) {
			workloads = append(workloads, info)
		} else {
			first = append(first, info)
		}
	}
	if err := multierror.Append(c.createAll(first), c.createAll(workloads)).ErrorOrNil(); err != nil {
		return nil, err
	}
	return &kube.Result{Created: resources}, nil
}

// createAll creates infos at once, each by Helm's Create; nil or a multierror.
func (c kubeClient) createAll(infos kube.ResourceList) *multierror.Error {
	errs := make([]error, len(infos))
	var wg sync.WaitGroup
	for i, info := range infos {
		wg.Go(func() { _, errs[i] = c.Client.Create(kube.ResourceList{info}) })
	}
	wg.Wait()
	return multierror.Append(nil, errs...)
}

// makesPods says whether objects of kind make pods (or are pods).
func makesPods(kind string) bool {
	switch kind {
	case "Pod", "StatefulSet", "Deployment", "DaemonSet", "ReplicaSet", "ReplicationController", "Job", "CronJob":
		return true
	}
	return false
}
