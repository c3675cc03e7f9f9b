//go:build e2e

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

package e2e

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// proveNetworkPolicy shows the chart's NetworkPolicy enforced by the local cluster, with
// kube-router's network policy controller turned on (make cluster-netpol-on): memcached serves a
// pod of its namespace and a client of another namespace that spec.networkPolicy.allowedClients
// names, the operator still reads its stats, and a pod of that other namespace the policy does not
// select is refused, until the policy is turned off and the same pod is served.
func proveNetworkPolicy() {
	const ns, apps = "memcached-netpol", "memcached-netpol-apps"
	// For this spec alone (hack/cluster/netpol.go says why), and off again even if it fails.
	mustMake("cluster-netpol-on")
	DeferCleanup(mustMake, "cluster-netpol-off")
	for _, n := range []string{ns, apps} {
		kubectl("create", "namespace", n)
		DeferCleanup(deleteNamespace, n)
	}
	kubectl("label", "namespace", apps, "team=apps")
	key := types.NamespacedName{Namespace: ns, Name: "cache"}
	Expect(k8s.Create(ctx(), &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
		Spec: cachev1.MemcachedSpec{ReplicaCount: ptr.To[int32](1), NetworkPolicy: &cachev1.NetworkPolicySpec{
			AllowedClients: []cachev1.NetworkPolicyPeer{{
				NamespaceSelector: &cachev1.LabelSelector{MatchLabels: map[string]cachev1.LabelValue{"team": "apps"}},
				PodSelector:       &cachev1.LabelSelector{MatchLabels: map[string]cachev1.LabelValue{"role": "cache-client"}},
			}}}}})).To(Succeed())
	var list string
	Eventually(func(g Gomega) {
		mc := &cachev1.Memcached{}
		g.Expect(k8s.Get(ctx(), key, mc)).To(Succeed())
		g.Expect(mc.Status.ReadyServers).To(HaveLen(1))
		g.Expect(mc.Status.Stats).NotTo(BeNil(), "the operator, in its own namespace, reads the servers' stats through the policy")
		list = strings.Join(mc.Status.Servers, ",")
	}, timeout, poll).Should(Succeed())
	Expect(policyNames(ns)).To(Equal([]string{"cache-memcached"}))

	By("serving a pod of the cache's namespace and a client of another namespace the policy allows")
	servedEventually(ns, "same-namespace", nil, "-servers", list, "-op", "store", "-keys", "100")
	servedEventually(apps, "allowed", map[string]string{"role": "cache-client"}, "-servers", list, "-op", "read", "-keys", "100")

	By("refusing a pod of that namespace the policy does not select")
	var refused clientCounts
	runClient(apps, "not-allowed", &refused, "-servers", list, "-op", "read", "-keys", "10", "-wait-reachable", "0")
	Expect(refused).To(And(HaveField("Failures", 10), HaveField("Hits", 0)), "first error: %s", refused.FirstError)
	Expect(refused.FirstError).To(MatchRegexp(`dial tcp .*: (connect: connection refused|i/o timeout)`), "its connections are refused (kube-router rejects them)")

	By("serving the same pod once the NetworkPolicy is turned off: the policy refused it, nothing else")
	kubectl("-n", ns, "patch", "memcached", key.Name, "--type=merge", "-p", `{"spec":{"networkPolicy":{"enabled":false}}}`)
	Eventually(func() []string { return policyNames(ns) }, timeout, poll).Should(BeEmpty())
	servedEventually(apps, "not-allowed", nil, "-servers", list, "-op", "read", "-keys", "100")
}

// policyNames lists the NetworkPolicies of namespace ns by name.
func policyNames(ns string) []string {
	GinkgoHelper()
	policies := &networkingv1.NetworkPolicyList{}
	Expect(k8s.List(ctx(), policies, client.InNamespace(ns))).To(Succeed())
	var names []string
	for _, p := range policies.Items {
		names = append(names, p.Name)
	}
	return names
}

// servedEventually runs memcache-client pods named name-1, name-2, ... with labels in ns until one
// is served every key. The policy agent allows a new pod's address a moment after the pod starts
// (kube-router refuses its first connections): memcache-client waits until the servers take one
// (-wait-reachable), as applications retry.
func servedEventually(ns, name string, labels map[string]string, args ...string) {
	GinkgoHelper()
	try := 0
	Eventually(func(g Gomega) {
		try++
		pod := clientPod(ns, fmt.Sprintf("%s-%d", name, try), args...)
		pod.Labels = labels
		g.Expect(k8s.Create(ctx(), pod)).To(Succeed())
		g.Eventually(podPhase(pod), 5*time.Minute, poll).Should(Or(Equal(corev1.PodSucceeded), Equal(corev1.PodFailed)))
		var got clientCounts
		clientResult(pod, &got)
		g.Expect(got).To(And(HaveField("Hits", got.Requests), HaveField("Misses", 0), HaveField("Failures", 0)), "first error: %s", got.FirstError)
		g.Expect(got.Requests).To(BeNumerically(">", 0))
	}, timeout, poll).Should(Succeed())
}
