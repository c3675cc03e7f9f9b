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

func (c *Cluster) etcd() component {
	return component{name: "etcd", args: []string{c.bin("etcd"),
		"--name=local", "--data-dir=" + c.path("etcd"),
		fmt.Sprintf("--listen-client-urls=http://127.0.0.1:%d", etcdClientPort),
		fmt.Sprintf("--advertise-client-urls=http://127.0.0.1:%d", etcdClientPort),
		fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", etcdPeerPort),
		fmt.Sprintf("--initial-advertise-peer-urls=http://127.0.0.1:%d", etcdPeerPort),
		fmt.Sprintf("--initial-cluster=local=http://127.0.0.1:%d", etcdPeerPort),
		"--quota-backend-bytes=4294967296", "--log-level=warn",
	}}
}

func (c *Cluster) apiServer(p *PKI) component {
	return component{name: "kube-apiserver", args: []string{c.bin("kube-apiserver"),
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", etcdClientPort),
		"--advertise-address=" + c.NodeIP, "--bind-address=0.0.0.0", fmt.Sprintf("--secure-port=%d", apiServerPort),
		"--tls-cert-file=" + p.APIServer.CertFile, "--tls-private-key-file=" + p.APIServer.KeyFile,
		"--client-ca-file=" + p.CA.CertFile,
		"--service-account-key-file=" + p.ServiceAccountPub, "--service-account-signing-key-file=" + p.ServiceAccountKey,
		"--service-account-issuer=https://kubernetes.default.svc." + clusterDomain,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--kubelet-client-certificate=" + p.APIServerKubeletClient.CertFile, "--kubelet-client-key=" + p.APIServerKubeletClient.KeyFile,
		"--kubelet-preferred-address-types=InternalIP",
		// Front proxy (aggregation layer): aggregated APIs such as OLM's packageserver need it.
		"--requestheader-client-ca-file=" + p.FrontProxyCA.CertFile, "--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + p.FrontProxyClient.CertFile, "--proxy-client-key-file=" + p.FrontProxyClient.KeyFile,
		"--enable-aggregator-routing=true",
		"--allow-privileged=true", "--profiling=false",
		// MutatingAdmissionPolicy (beta, off by default in 1.35): the e2e emulates OpenShift's
		// restricted-v2 SCC, which assigns each pod a UID from its namespace's range, with one.
		"--feature-gates=MutatingAdmissionPolicy=true", "--runtime-config=admissionregistration.k8s.io/v1beta1=true",
	}}
}

func (c *Cluster) controllerManager(p *PKI) component {
	kc := c.path("kubeconfigs", "controller-manager")
	return component{name: "kube-controller-manager", args: []string{c.bin("kube-controller-manager"),
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1", "--use-service-account-credentials",
		"--service-account-private-key-file=" + p.ServiceAccountKey, "--root-ca-file=" + p.CA.CertFile,
		"--cluster-signing-cert-file=" + p.CA.CertFile, "--cluster-signing-key-file=" + p.CA.KeyFile,
		"--service-cluster-ip-range=" + serviceCIDR, "--leader-elect=false",
		"--controllers=*,-nodeipam", "--profiling=false",
	}}
}

func (c *Cluster) scheduler() component {
	kc := c.path("kubeconfigs", "scheduler")
	return component{name: "kube-scheduler", args: []string{c.bin("kube-scheduler"),
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1", "--leader-elect=false", "--profiling=false",
	}}
}

// The pause image every pod sandbox uses, preloaded into containerd (built by `images pause`).
const pauseImage = "registry.k8s.io/pause:3.10"

func (c *Cluster) containerdConfig() string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q

[grpc]
  address = %[3]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[4]q
  # Required here: CAP_SYS_RESOURCE is not in the bounding set, so runc cannot lower
  # oom_score_adj and every sandbox would fail.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[5]q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %[6]q
`, c.path("containerd", "root"), c.path("containerd", "state"), c.containerdSocket(), pauseImage,
		c.path("cni", "net.d"), c.path("containerd", "certs.d"))
}

// registryHostsTOML makes containerd pull the images of server from the local registry, which it
// trusts through the cluster's CA. For the local registry itself that is plain trust; for a public
// registry it is a mirror, as disconnected clusters use: an image such as
// quay.io/example/memcached-operator:v0.1.0 is pulled from localhost:5000/example/memcached-operator.
func registryHostsTOML(server, ca string) string {
	return fmt.Sprintf("server = \"https://%s\"\n\n[host.\"https://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = %q\n",
		server, RegistryHost, ca)
}

// mirroredRegistries are the public registries whose images the local registry can stand in for.
var mirroredRegistries = []string{"quay.io", "docker.io", "registry.access.redhat.com"}

func (c *Cluster) containerd() component {
	return component{name: "containerd", args: []string{"containerd", "--config=" + c.path("containerd", "config.toml")}}
}

func (c *Cluster) cniConfig() string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "memcached-operator",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": %q
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
`, bridgeName, podCIDR, c.path("cni", "ipam"))
}

func (c *Cluster) kubeletConfig(p *PKI) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# The machine has cgroup v1 hierarchies.
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://%s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %q}
authorization: {mode: Webhook}
tlsCertFile: %q
tlsPrivateKeyFile: %q
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
clusterDNS: [%q]
clusterDomain: %s
resolvConf: %q
failSwapOn: false
evictionHard: {memory.available: "100Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
maxPods: 110
# A pod's Secret volumes follow a changed Secret at its next sync: every 15 s here (the default
# minute), so that a renewed TLS certificate reaches memcached within the e2e suite's short-lived
# certificates' margin.
syncFrequency: 15s
`, c.containerdSocket(), p.CA.CertFile, p.KubeletServing.CertFile, p.KubeletServing.KeyFile, kubeletPort,
		clusterDNSIP, clusterDomain, c.path("kubelet", "resolv.conf"))
}

func (c *Cluster) kubelet() component {
	return component{name: "kubelet", args: []string{c.bin("kubelet"),
		"--config=" + c.path("kubelet", "config.yaml"), "--kubeconfig=" + c.path("kubeconfigs", "kubelet"),
		"--root-dir=" + c.path("kubelet", "root"), "--node-ip=" + c.NodeIP, "--hostname-override=" + c.NodeName,
	}}
}

func (c *Cluster) kubeProxyConfig() string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clusterCIDR: %q
hostnameOverride: %s
bindAddress: 127.0.0.1
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
clientConnection: {kubeconfig: %q}
iptables: {localhostNodePorts: false}
# Leave the host's conntrack sysctls alone.
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
`, podCIDR, c.NodeName, c.path("kubeconfigs", "kube-proxy"))
}

func (c *Cluster) kubeProxy() component {
	return component{name: "kube-proxy", args: []string{c.bin("kube-proxy"), "--config=" + c.path("kube-proxy", "config.yaml")}}
}

// writeConfigs writes every configuration file of the node.
func (c *Cluster) writeConfigs(p *PKI) error {
	for _, server := range append([]string{RegistryHost}, mirroredRegistries...) {
		if err := mkdirs(c.path("containerd", "certs.d", server)); err != nil {
			return err
		}
		if err := os.WriteFile(c.path("containerd", "certs.d", server, "hosts.toml"), []byte(registryHostsTOML(server, p.CA.CertFile)), 0o644); err != nil {
			return err
		}
	}
	if err := mkdirs(c.path("cni", "net.d"), c.path("cni", "ipam"),
		c.path("kubelet", "root"), c.path("kube-proxy"), c.path("etcd")); err != nil {
		return err
	}
	if err := os.Chmod(c.path("etcd"), 0o700); err != nil {
		return err
	}
	files := map[string]string{
		c.path("containerd", "config.toml"):                      c.containerdConfig(),
		c.path("cni", "net.d", "10-memcached-operator.conflist"): c.cniConfig(),
		c.path("kubelet", "config.yaml"):                         c.kubeletConfig(p),
		c.path("kubelet", "resolv.conf"):                         "# no upstream resolvers: pods resolve cluster names only\n",
		c.path("kube-proxy", "config.yaml"):                      c.kubeProxyConfig(),
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}
