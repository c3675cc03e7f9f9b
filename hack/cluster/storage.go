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

package main

import (
	"fmt"
	"time"
)

// `storage-on` gives the cluster a default StorageClass, local-path, whose volumes the
// local-storage provisioner (hack/storage) makes on the node: a directory per claim under the
// state folder's volumes/, a `local` volume pinned to the node, bound when its first pod is
// scheduled and deleted with its claim. `storage-off` stops the provisioner (the class stays,
// claims wait). `down` removes the volumes with the state folder.

// localStorageMetricsPort is the provisioner's /metrics on 127.0.0.1, which says that it runs.
const localStorageMetricsPort = 10262

// localStorageClass is the default class; the provisioner's name is its --provisioner default.
const localStorageClass = `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: local-path
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: my.domain/local-storage
reclaimPolicy: Delete
volumeBindingMode: WaitForFirstConsumer
`

// localStorageRBAC is what a provisioner of SIG Storage's library reads and writes, with leader
// election off (one node, one provisioner), for the client certificate of its kubeconfig.
const localStorageRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:local-storage"}
rules:
- apiGroups: [""]
  resources: [persistentvolumes]
  verbs: [get, list, watch, create, delete, update, patch]
- apiGroups: [""]
  resources: [persistentvolumeclaims]
  verbs: [get, list, watch, update, patch]
- apiGroups: [storage.k8s.io]
  resources: [storageclasses]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [events]
  verbs: [create, update, patch]
- apiGroups: [""]
  resources: [nodes]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:local-storage"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:local-storage"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:local-storage"}]
`

func (c *Cluster) localStorage(self string) component {
	return component{name: "local-storage", args: []string{helper(self, "local-storage"),
		"--kubeconfig=" + c.path("kubeconfigs", "local-storage"), "--dir=" + c.path("volumes"),
		"--node=" + c.NodeName, fmt.Sprintf("--metrics-port=%d", localStorageMetricsPort),
	}}
}

// startStorage starts the provisioner, waits until it serves, and makes its class the default.
func (c *Cluster) startStorage(self string) error {
	if err := c.startOnNode(c.localStorage(self), "cluster-storage-on", localStorageRBAC,
		fmt.Sprintf("http://127.0.0.1:%d/metrics", localStorageMetricsPort)); err != nil {
		return err
	}
	if err := c.applyManifest(localStorageClass); err != nil {
		return err
	}
	logf("storage class local-path (the default) provisions node-local volumes under %s", c.path("volumes"))
	return nil
}

// stopStorage stops the provisioner: claims made meanwhile wait for it.
func (c *Cluster) stopStorage() error {
	if err := c.stop("local-storage", 10*time.Second); err != nil {
		return err
	}
	logf("local-storage is stopped: new claims of local-path wait")
	return nil
}
