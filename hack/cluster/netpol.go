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
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

// `netpol-on` makes the cluster enforce NetworkPolicy with kube-router's network policy
// controller alone (no BGP routing, no service proxy: the CNI bridge and kube-proxy do those), as
// its kube-router-firewall-daemonset.yaml runs it, but on the node beside kube-proxy: per pod that
// a policy selects, iptables chains and ipsets of the peers it allows. Traffic from the node
// itself (the kubelet's probes, the e2e suite's Prometheus) always passes, as with kube-router
// anywhere. `netpol-off` stops it and removes its chains and ipsets. (kube-network-policies, SIG
// Network's agent, needs nftables' queue expression, which the kernel of this project's machines
// lacks.)
//
// The e2e suite turns it on for its NetworkPolicy spec alone: kube-router v2.1.0 refuses a few
// connections while it syncs pods that come and go (a new pod's first connections; 2 of 1172
// requests through a Service while an upgrade replaced its pods), which the specs that count
// every failed request during upgrades would charge to the operator.

// kubeRouterHealthPort is kube-router's /healthz (its default), on every address of the node.
const kubeRouterHealthPort = 20244

func (c *Cluster) kubeRouter(self string) component {
	return component{name: "kube-router", args: []string{helper(self, "kube-router"),
		"--run-firewall=true", "--run-router=false", "--run-service-proxy=false",
		"--kubeconfig=" + c.path("kubeconfigs", "kube-router"), "--hostname-override=" + c.NodeName,
		"--service-cluster-ip-range=" + serviceCIDR, fmt.Sprintf("--health-port=%d", kubeRouterHealthPort),
	}}
}

// kubeRouterRBAC is what its firewall reads (kube-router's generic manifest without the rights
// of its router and proxy), for the client certificate of its kubeconfig.
const kubeRouterRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:kube-router"}
rules:
- apiGroups: [""]
  resources: [namespaces, pods, services, nodes, endpoints]
  verbs: [get, list, watch]
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [get, list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:kube-router"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:kube-router"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:kube-router"}]
`

// startNetworkPolicy starts kube-router's firewall once the node is registered and waits until it
// reports healthy.
func (c *Cluster) startNetworkPolicy(self string) error {
	if err := c.startOnNode(c.kubeRouter(self), "cluster-netpol-on", kubeRouterRBAC,
		fmt.Sprintf("http://127.0.0.1:%d/healthz", kubeRouterHealthPort)); err != nil {
		return err
	}
	logf("kube-router enforces NetworkPolicy")
	return nil
}

// startOnNode starts a component built beside the cluster tool only when asked for (by the make
// target named), with the rights its client certificate needs (rbac), and waits until url
// answers 200.
func (c *Cluster) startOnNode(comp component, target, rbac, url string) error {
	if _, err := os.Stat(comp.args[0]); err != nil {
		return fmt.Errorf("%s is missing: run `make %s`", comp.args[0], target)
	}
	if err := c.applyManifest(rbac); err != nil {
		return err
	}
	if err := c.start(comp); err != nil {
		return err
	}
	if err := waitFor(comp.name, 60*time.Second, func() error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		return nil
	}); err != nil {
		return c.explain(comp.name, err)
	}
	return nil
}

// stopNetworkPolicy stops kube-router and removes its iptables chains and ipsets: the cluster's
// pods reach each other again as before netpol-on.
func (c *Cluster) stopNetworkPolicy() error {
	if err := c.stop("kube-router", 10*time.Second); err != nil {
		return err
	}
	cleanIptablesChains(kubeRouterChain)
	cleanIPSets()
	logf("kube-router is stopped: NetworkPolicy is no longer enforced")
	return nil
}

// kubeRouterChain reports whether an iptables chain is one kube-router's firewall makes.
func kubeRouterChain(chain string) bool {
	for _, prefix := range []string{"KUBE-ROUTER-", "KUBE-POD-FW-", "KUBE-NWPLCY-"} {
		if strings.HasPrefix(chain, prefix) {
			return true
		}
	}
	return false
}

// cleanIPSets destroys kube-router's ipsets, once cleanIptables has removed the rules that use
// them. (kube-router --cleanup-config would also flush every IPVS service of the machine.)
func cleanIPSets() {
	out, err := exec.Command("ipset", "list", "-n").Output()
	if err != nil {
		return
	}
	for _, name := range strings.Fields(string(out)) {
		if strings.HasPrefix(strings.TrimPrefix(name, "inet6:"), "KUBE-") {
			if err := exec.Command("ipset", "destroy", name).Run(); err == nil {
				logf("removed ipset %s", name)
			}
		}
	}
}
