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
	"bufio"
	"crypto/tls"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// serverFigures are what memcache-client -op stats reports of each server.
type serverFigures map[string]map[string]string

// restartsOf counts the restarts of the memcached containers of the pods with these labels, by pod.
func restartsOf(ns string, selector map[string]string) map[string]int32 {
	GinkgoHelper()
	pods := &corev1.PodList{}
	Expect(k8s.List(ctx(), pods, client.InNamespace(ns), client.MatchingLabels(selector))).To(Succeed())
	out := map[string]int32{}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "memcached" {
				out[p.Name] = cs.RestartCount
			}
		}
	}
	return out
}

// podUIDs are the UIDs of the pods with these labels, by name.
func podUIDs(ns string, selector map[string]string) map[string]types.UID {
	GinkgoHelper()
	pods := &corev1.PodList{}
	Expect(k8s.List(ctx(), pods, client.InNamespace(ns), client.MatchingLabels(selector))).To(Succeed())
	out := map[string]types.UID{}
	for _, p := range pods.Items {
		out[p.Name] = p.UID
	}
	return out
}

// proveMemoryInPlace stores 30000 keys in a Memcached of 2 servers, doubles its memory and halves
// it again: each time every server's memcached runs with the new item memory (its own stats say
// so), no container restarts, no pod is replaced, and a hashing client reads back at least 99% of
// the keys. Where the kubelet cannot resize in place, the spec says what it lacks.
func proveMemoryInPlace() {
	const ns = "memcached-resize"
	kubectl("create", "namespace", ns)
	DeferCleanup(deleteNamespace, ns)
	key := types.NamespacedName{Namespace: ns, Name: "cache"}
	selector := map[string]string{"app.kubernetes.io/instance": key.Name, "app.kubernetes.io/name": "memcached"}
	Expect(k8s.Create(ctx(), &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
		Spec: cachev1.MemcachedSpec{ReplicaCount: ptr.To[int32](2), MinReadySeconds: ptr.To[int32](2),
			Memcached: &cachev1.MemcachedServer{MaxMemoryMB: 64}}})).To(Succeed())
	servers := awaitServers(key, 2)
	list := strings.Join(servers, ",")

	By("storing 30000 keys over the 2 servers")
	var stored, read clientCounts
	runClient(ns, "store", &stored, "-servers", list, "-op", "store", "-keys", "30000")
	Expect(stored).To(And(HaveField("Hits", 30000), HaveField("Failures", 0)))
	uids, restarts := podUIDs(ns, selector), restartsOf(ns, selector)
	Expect(uids).To(HaveLen(2))

	change := func(mb int32, step string) {
		GinkgoHelper()
		By(fmt.Sprintf("%s item memory to %d MiB (container %dMi)", step, mb, mb+32))
		kubectl("-n", ns, "patch", "memcached", key.Name, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"memcached":{"maxMemoryMB":%d}}}`, mb))
		Eventually(func(g Gomega) cachev1.HelmCondition {
			return memcachedConditionOf(g, key, "Resizing")
		}, timeout, poll).Should(And(HaveField("Status", metav1.ConditionFalse), HaveField("Message", ContainSubstring(fmt.Sprintf("→ %d MiB", mb)))),
			"the change is made; where it was rolled out instead, the message says what the cluster lacks")
		Expect(memcachedConditionOf(Default, key, "Resizing").Reason).To(Equal("ResizedInPlace"),
			"resized in place: %s", memcachedConditionOf(Default, key, "Resizing").Message)
		var figures serverFigures
		runClient(ns, fmt.Sprintf("stats-%d", mb), &figures, "-servers", list, "-op", "stats")
		for _, s := range servers {
			Expect(figures[s]).To(HaveKeyWithValue("limit_maxbytes", strconv.Itoa(int(mb)<<20)), "server %s runs with %d MiB", s, mb)
		}
		Expect(podUIDs(ns, selector)).To(Equal(uids), "no pod was replaced")
		Expect(restartsOf(ns, selector)).To(Equal(restarts), "no container restarted")
		for name := range uids {
			pod := &corev1.Pod{}
			Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: ns, Name: name}, pod)).To(Succeed())
			Expect(pod.Status.ContainerStatuses[0].Resources.Limits.Memory().String()).To(Equal(fmt.Sprintf("%dMi", mb+32)),
				"the kubelet runs %s with the new memory limit", name)
		}
		runClient(ns, fmt.Sprintf("read-%d", mb), &read, "-servers", list, "-op", "read", "-keys", "30000")
		Expect(read.Failures).To(BeZero())
		Expect(read.Wrong).To(BeZero())
		Expect(read.Hits).To(BeNumerically(">=", 29700), "at least 99%% of the keys are read back (%d misses)", read.Misses)
		Expect(kubectl("-n", ns, "get", "statefulset", "cache-memcached", "-o", "jsonpath={.spec.updateStrategy.rollingUpdate.partition}")).
			To(Or(BeEmpty(), Equal("0")), "the rollout is no longer held")
	}
	change(128, "doubling")
	Eventually(eventReasonsOf(ns, key.Name), timeout, poll).Should(ContainElements("ResizingInPlace", "ResizedInPlace"))
	change(64, "halving")
}

// awaitServers waits until the Memcached key has n ready servers and returns them.
func awaitServers(key types.NamespacedName, n int) []string {
	GinkgoHelper()
	var servers []string
	Eventually(func(g Gomega) {
		mc := &cachev1.Memcached{}
		g.Expect(k8s.Get(ctx(), key, mc)).To(Succeed())
		g.Expect(mc.Status.Servers).To(HaveLen(n))
		g.Expect(mc.Status.ReadyServers).To(Equal(mc.Status.Servers))
		g.Expect(mc.Status.Conditions).To(ContainElement(And(HaveField("Type", "Available"), HaveField("Status", metav1.ConditionTrue))))
		servers = mc.Status.Servers
	}, timeout, poll).Should(Succeed())
	return servers
}

// proveAutopilot overfills a Memcached with the autopilot on: it grows the memory in place, then
// adds a server; once the load stops and its items expire, it removes the server again. Each step
// shows in status (autopilot, conditions), an Event and the operator's metrics.
func proveAutopilot() {
	const ns = "memcached-autopilot"
	kubectl("create", "namespace", ns)
	DeferCleanup(deleteNamespace, ns)
	key := types.NamespacedName{Namespace: ns, Name: "cache"}
	Expect(k8s.Create(ctx(), &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
		Spec: cachev1.MemcachedSpec{ReplicaCount: ptr.To[int32](1), MinReadySeconds: ptr.To[int32](2),
			Memcached: &cachev1.MemcachedServer{MaxMemoryMB: 32},
			Autoscaling: &cachev1.AutoscalingSpec{Enabled: ptr.To(true), MaxReplicas: ptr.To[int32](2), MaxMemoryMB: ptr.To[int32](64),
				// The shortest the API allows: with the suite's stats every 10 s a figure lasts two
				// reads (20 s) before a step.
				ScaleUpAfter: "10s", ScaleInAfter: "10s", CoolDown: "10s", ScaleInBelowPercent: 40}}})).To(Succeed())
	awaitServers(key, 1)
	server := map[string]string{"app.kubernetes.io/instance": key.Name}
	uids := podUIDs(ns, server)
	status := func(g Gomega) cachev1.MemcachedStatus {
		mc := &cachev1.Memcached{}
		g.Expect(k8s.Get(ctx(), key, mc)).To(Succeed())
		return mc.Status
	}
	metrics := operatorMetricsReader(ns)

	By("overfilling the first server with items that expire in 20 s")
	addr := fmt.Sprintf("cache-memcached-0.cache-memcached-headless.%s.svc:11211", ns)
	// 20 MB/s of items that live 20 s: 400 MB live, more than the 64 MiB the autopilot may give.
	load := probePod(ns, "load", "-addr", addr, "-value-size", "100000", "-ttl", "20", "-interval", "5ms", "-wait-ready", "1m")
	Expect(k8s.Create(ctx(), load)).To(Succeed())

	By("growing the item memory in place first: 32 → 64 MiB, no restart")
	Eventually(func(g Gomega) *cachev1.AutopilotStatus { return status(g).Autopilot }, 5*time.Minute, poll).Should(
		And(Not(BeNil()), HaveField("MaxMemoryMB", BeEquivalentTo(64)), HaveField("Replicas", BeEquivalentTo(1)), HaveField("LastStep", ContainSubstring("32 → 64 MiB"))))
	Eventually(eventReasonsOf(ns, key.Name), timeout, poll).Should(ContainElement("MemoryGrown"))
	Eventually(func(g Gomega) cachev1.HelmCondition { return memcachedConditionOf(g, key, "Resizing") }, timeout, poll).Should(
		And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "ResizedInPlace")))
	// A replaced server has the same name and no restarts: the UID says it is the same pod.
	Expect(podUIDs(ns, server)).To(Equal(uids), "the server was not replaced")
	Expect(restartsOf(ns, server)).To(HaveKeyWithValue("cache-memcached-0", BeZero()), "its memcached did not restart")
	mc := &cachev1.Memcached{}
	Expect(k8s.Get(ctx(), key, mc)).To(Succeed())
	Expect(mc.Spec.Memcached.MaxMemoryMB).To(BeEquivalentTo(32), "the spec stays what the user asked")
	Expect(kubectl("-n", ns, "get", "statefulset", "cache-memcached", "-o", "jsonpath={.spec.template.spec.containers[0].args}")).
		To(ContainSubstring(`"-m","64"`), "the chart renders the autopilot's choice")

	By("then adding a server, once the memory is at maxMemoryMB and the servers still evict")
	Eventually(func(g Gomega) *cachev1.AutopilotStatus { return status(g).Autopilot }, 5*time.Minute, poll).Should(
		And(HaveField("Replicas", BeEquivalentTo(2)), HaveField("LastStep", ContainSubstring("servers 1 → 2"))))
	awaitServers(key, 2)
	Eventually(eventReasonsOf(ns, key.Name), timeout, poll).Should(ContainElement("ServerAdded"))
	Eventually(func(g Gomega) cachev1.HelmCondition { return memcachedConditionOf(g, key, "ScalingLimited") }, 5*time.Minute, poll).Should(
		And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "AtMaximum")), "at its bounds while the load goes on")
	Eventually(metrics, timeout, poll).Should(And(
		HaveKeyWithValue(`memcached_operator_autopilot_steps_total{memcached="cache",memcached_namespace="memcached-autopilot",step="grow_memory"}`, 1.0),
		HaveKeyWithValue(`memcached_operator_autopilot_steps_total{memcached="cache",memcached_namespace="memcached-autopilot",step="add_server"}`, 1.0),
		HaveKeyWithValue(`memcached_operator_autopilot_replicas{memcached="cache",memcached_namespace="memcached-autopilot"}`, 2.0),
		HaveKeyWithValue(`memcached_operator_autopilot_item_memory_bytes{memcached="cache",memcached_namespace="memcached-autopilot"}`, float64(64<<20))))

	By("stopping the load: once its items have expired and the cool-down has passed, the highest server goes")
	Expect(k8s.Delete(ctx(), load)).To(Succeed())
	Eventually(func(g Gomega) *cachev1.AutopilotStatus { return status(g).Autopilot }, 6*time.Minute, poll).Should(
		And(HaveField("Replicas", BeEquivalentTo(1)), HaveField("LastStep", ContainSubstring("servers 2 → 1, the highest removed"))))
	awaitServers(key, 1)
	Eventually(eventReasonsOf(ns, key.Name), timeout, poll).Should(ContainElement("ServerRemoved"))
	Eventually(metrics, timeout, poll).Should(
		HaveKeyWithValue(`memcached_operator_autopilot_steps_total{memcached="cache",memcached_namespace="memcached-autopilot",step="remove_server"}`, 1.0))
	Expect(status(Default).Conditions).To(ContainElement(And(HaveField("Type", "ScalingActive"), HaveField("Status", metav1.ConditionTrue))))

	By("turning the autopilot off: the cache goes back to the spec's size")
	kubectl("-n", ns, "patch", "memcached", key.Name, "--type=merge", "-p", `{"spec":{"autoscaling":{"enabled":false}}}`)
	Eventually(func(g Gomega) *cachev1.AutopilotStatus { return status(g).Autopilot }, timeout, poll).Should(BeNil())
	Eventually(func() string {
		return kubectl("-n", ns, "get", "statefulset", "cache-memcached", "-o", "jsonpath={.spec.template.spec.containers[0].args}")
	}, timeout, poll).Should(ContainSubstring(`"-m","32"`))
}

// operatorMetricsReader returns a function that reads the operator's metrics, as a scraper with
// the metrics-reader role does, from the operator's pod: series by their name and labels.
func operatorMetricsReader(ns string) func(g Gomega) map[string]float64 {
	GinkgoHelper()
	kubectl("-n", ns, "create", "serviceaccount", "metrics-reader")
	binding := "memcached-e2e-autopilot-metrics"
	_, _ = kubectlOut("delete", "clusterrolebinding", binding, "--ignore-not-found")
	kubectl("create", "clusterrolebinding", binding, "--clusterrole=memcached-operator-metrics-reader", "--serviceaccount="+ns+":metrics-reader")
	DeferCleanup(func() { _, _ = kubectlOut("delete", "clusterrolebinding", binding, "--ignore-not-found") })
	token := strings.TrimSpace(kubectl("-n", ns, "create", "token", "metrics-reader", "--duration=1h"))
	httpClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return func(g Gomega) map[string]float64 {
		pods := &corev1.PodList{}
		g.Expect(k8s.List(ctx(), pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"control-plane": "controller-manager"})).To(Succeed())
		out := map[string]float64{}
		for _, p := range pods.Items {
			if p.Status.PodIP == "" || p.DeletionTimestamp != nil {
				continue
			}
			req, err := http.NewRequestWithContext(ctx(), http.MethodGet, "https://"+p.Status.PodIP+":8443/metrics", nil)
			g.Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := httpClient.Do(req)
			g.Expect(err).NotTo(HaveOccurred())
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				line := sc.Text()
				if strings.HasPrefix(line, "#") {
					continue
				}
				i := strings.LastIndex(line, " ")
				if v, err := strconv.ParseFloat(line[i+1:], 64); i > 0 && err == nil {
					out[line[:i]] += v // a series the leader and a standby both serve counts once per reconcile it made
				}
			}
			_ = resp.Body.Close()
		}
		return out
	}
}
