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
	"os"
)

// writeKubeconfig writes a kubeconfig for a client certificate of the cluster.
func (c *Cluster) writeKubeconfig(path, user string, ca, client *keyPair, server string) error {
	content := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: %s
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: local
  context:
    cluster: local
    user: %s
current-context: local
`, server, ca.CertFile, user, client.CertFile, client.KeyFile, user)
	return os.WriteFile(path, []byte(content), 0o600)
}

func (c *Cluster) apiServerURL() string { return fmt.Sprintf("https://%s:%d", c.NodeIP, apiServerPort) }

func (c *Cluster) writeKubeconfigs(p *PKI) error {
	if err := mkdirs(c.path("kubeconfigs")); err != nil {
		return err
	}
	for _, kc := range []struct {
		file, user string
		cert       *keyPair
	}{
		{c.Kubeconfig(), "admin", p.Admin},
		{c.path("kubeconfigs", "controller-manager"), "system:kube-controller-manager", p.ControllerManager},
		{c.path("kubeconfigs", "scheduler"), "system:kube-scheduler", p.Scheduler},
		{c.path("kubeconfigs", "kubelet"), "system:node:" + c.NodeName, p.Node},
		{c.path("kubeconfigs", "kube-proxy"), "system:kube-proxy", p.KubeProxy},
		{c.path("kubeconfigs", "kube-router"), "system:kube-router", p.KubeRouter},
		{c.path("kubeconfigs", "local-storage"), "system:local-storage", p.LocalStorage},
	} {
		if err := c.writeKubeconfig(kc.file, kc.user, p.CA, kc.cert, c.apiServerURL()); err != nil {
			return err
		}
	}
	return nil
}
