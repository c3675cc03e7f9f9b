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
	"net"
	"os"
	"path/filepath"
)

// Cluster is the layout of one local cluster: every file it writes lives under StateDir.
type Cluster struct {
	StateDir string // absolute
	BinDir   string // kube-apiserver, etcd, kubelet, ... (make cluster-binaries)
	NodeIP   string
	NodeName string
}

// Fixed network settings of the local cluster. They are private ranges inside this machine's own
// network namespaces: pods and services never reach beyond the node.
const (
	serviceCIDR   = "10.96.0.0/16"
	apiServiceIP  = "10.96.0.1"
	clusterDNSIP  = "10.96.0.10"
	podCIDR       = "10.244.0.0/24"
	clusterDomain = "cluster.local"
	bridgeName    = "cni0"

	etcdClientPort = 2379
	etcdPeerPort   = 2380
	apiServerPort  = 6443
	kubeletPort    = 10250
	// RegistryPort serves the local image registry on 127.0.0.1, over TLS with the cluster's CA.
	RegistryPort = 5000
)

// RegistryHost is how images in the local registry are named.
var RegistryHost = fmt.Sprintf("localhost:%d", RegistryPort)

func (c *Cluster) path(parts ...string) string {
	return filepath.Join(append([]string{c.StateDir}, parts...)...)
}

func (c *Cluster) bin(name string) string { return filepath.Join(c.BinDir, name) }

// Kubeconfig is the admin kubeconfig of the cluster.
func (c *Cluster) Kubeconfig() string { return c.path("kubeconfig") }

func (c *Cluster) containerdSocket() string { return c.path("containerd", "containerd.sock") }

// nodeIP picks the first non-loopback IPv4 address of an interface that is up.
func nodeIP() (string, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 || iface.Name == bridgeName {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
				return ipn.IP.String(), nil
			}
		}
	}
	return "", fmt.Errorf("no non-loopback IPv4 address: the API server must listen on one so pods reach it")
}

func newCluster(stateDir, binDir string) (*Cluster, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, err
	}
	absBin, err := filepath.Abs(binDir)
	if err != nil {
		return nil, err
	}
	ip, err := nodeIP()
	if err != nil {
		return nil, err
	}
	return &Cluster{StateDir: abs, BinDir: absBin, NodeIP: ip, NodeName: "memcached-operator-node"}, nil
}

func mkdirs(dirs ...string) error {
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}
