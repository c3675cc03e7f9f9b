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
	"encoding/json"
	"fmt"
	"slices"
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

// clientPod runs memcache-client, an application's sharding client (gomemcache with rendezvous
// hashing), with args.
func clientPod(ns, name string, args ...string) *corev1.Pod {
	pod := probePod(ns, name, args...)
	pod.Spec.Containers[0].Name, pod.Spec.Containers[0].Image = "client", clientImage
	return pod
}

// runClient runs memcache-client to completion in ns and decodes its JSON result into out.
func runClient(ns, name string, out any, args ...string) {
	GinkgoHelper()
	pod := startClient(ns, name, args...)
	Eventually(podPhase(pod), 5*time.Minute, poll).Should(Or(Equal(corev1.PodSucceeded), Equal(corev1.PodFailed)))
	clientResult(pod, out)
}

func startClient(ns, name string, args ...string) *corev1.Pod {
	GinkgoHelper()
	pod := clientPod(ns, name, args...)
	Expect(k8s.Create(ctx(), pod)).To(Succeed())
	return pod
}

func podPhase(pod *corev1.Pod) func(g Gomega) corev1.PodPhase {
	return func(g Gomega) corev1.PodPhase {
		g.Expect(k8s.Get(ctx(), client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		return pod.Status.Phase
	}
}

// clientResult decodes the last line a finished client pod printed.
func clientResult(pod *corev1.Pod, out any) {
	GinkgoHelper()
	log := kubectl("-n", pod.Namespace, "logs", pod.Name)
	Expect(pod.Status.Phase).To(Equal(corev1.PodSucceeded), "memcache-client failed:\n%s", log)
	lines := strings.Split(strings.TrimSpace(log), "\n")
	Expect(json.Unmarshal([]byte(lines[len(lines)-1]), out)).To(Succeed(), "memcache-client printed:\n%s", log)
}

// clientCounts is memcache-client's result of store and read.
type clientCounts struct {
	Requests, Hits, Misses, Wrong, Failures int
	PerServer                               map[string]int
	FirstError                              string
}

// watchPass is one pass of memcache-client's watch over every key.
type watchPass struct {
	At time.Time
	clientCounts
}

// proveOneCache uses a Memcached of 3 servers as applications do, through a sharding client
// configured from status.servers (and from SRV): every key read back, no stale read after a
// delete, at most one server's keys cold at any moment of a rolling change, every server's name
// kept, and most keys kept when a server is added.
func proveOneCache() {
	const ns = "memcached-servers"
	kubectl("create", "namespace", ns)
	DeferCleanup(deleteNamespace, ns)
	key := types.NamespacedName{Namespace: ns, Name: "cache"}
	Expect(k8s.Create(ctx(), &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
		Spec: cachev1.MemcachedSpec{ReplicaCount: ptr.To[int32](3), MinReadySeconds: ptr.To[int32](5)}})).To(Succeed())
	status := func(g Gomega) cachev1.MemcachedStatus {
		mc := &cachev1.Memcached{}
		g.Expect(k8s.Get(ctx(), key, mc)).To(Succeed())
		return mc.Status
	}
	ready := func(n int) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			st := status(g)
			g.Expect(st.Servers).To(HaveLen(n))
			g.Expect(st.ReadyServers).To(Equal(st.Servers), "every server ready")
			g.Expect(st.ReadyReplicas).To(BeEquivalentTo(n))
		}, timeout, poll).Should(Succeed())
	}
	ready(3)
	servers := status(Default).Servers
	for i, s := range servers {
		Expect(s).To(Equal(fmt.Sprintf("cache-memcached-%d.cache-memcached-headless.%s.svc:11211", i, ns)))
	}
	list := strings.Join(servers, ",")
	Expect(kubectl("-n", ns, "get", "configmap", "cache-memcached-servers", "-o", "jsonpath={.data.MEMCACHED_SERVERS}")).To(Equal(list))

	By("storing 10000 keys through the server list and reading every one back")
	var stored, read clientCounts
	runClient(ns, "store", &stored, "-servers", list, "-op", "store", "-keys", "10000")
	Expect(stored).To(And(HaveField("Hits", 10000), HaveField("Failures", 0)))
	runClient(ns, "read", &read, "-servers", list, "-op", "read", "-keys", "10000")
	Expect(read).To(And(HaveField("Hits", 10000), HaveField("Misses", 0), HaveField("Wrong", 0), HaveField("Failures", 0)))
	Expect(read.PerServer).To(BeEmpty())

	By("deleting 1000 of them: no server serves a deleted key")
	var deleted map[string]int
	runClient(ns, "delete", &deleted, "-servers", list, "-op", "delete", "-keys", "1000")
	Expect(deleted).To(Equal(map[string]int{"deleted": 1000, "stale": 0, "failures": 0}))

	By("finding the same servers through SRV, as dnssrv clients (Mimir, Thanos, Loki) do")
	var found struct{ Servers []string }
	runClient(ns, "srv", &found, "-srv", "_memcache._tcp.cache-memcached-headless."+ns+".svc", "-op", "servers")
	Expect(hostsAndPorts(found.Servers)).To(Equal(hostsAndPorts(servers)))

	By("rolling a config change while an application reads every key each second")
	watcher := startClient(ns, "watch", "-servers", list, "-op", "watch", "-keys", "3000", "-prefix", "warm", "-duration", "6m", "-interval", "1s")
	Eventually(podPhase(watcher), timeout, poll).Should(Equal(corev1.PodRunning))
	Eventually(func() string {
		logs, _ := kubectlOut("-n", ns, "logs", watcher.Name)
		return logs
	}, timeout, poll).Should(ContainSubstring("a pass hit every key"), "the first passes store every key")
	before := map[string]string{}
	for _, p := range runningPodsIn(ns, map[string]string{"app.kubernetes.io/instance": key.Name})(Default) {
		before[p] = kubectl("-n", ns, "get", "pod", p, "-o", "jsonpath={.metadata.uid}")
	}
	// (A change of pod annotations alone would be made in place: memcached's flags roll out.)
	kubectl("-n", ns, "patch", "memcached", key.Name, "--type=merge", "-p", `{"spec":{"memcached":{"maxConnections":2048}}}`)
	Eventually(func(g Gomega) {
		for p, uid := range before {
			g.Expect(kubectlOut("-n", ns, "get", "pod", p, "-o", "jsonpath={.metadata.uid}")).NotTo(Equal(uid), "pod %s replaced", p)
		}
		g.Expect(status(g).Conditions).To(ContainElement(And(HaveField("Type", "Progressing"), HaveField("Reason", "Complete"))))
	}, 4*time.Minute, poll).Should(Succeed())
	ready(3)
	Expect(status(Default).Servers).To(Equal(servers), "every server kept its name through the rollout")
	// The rollout is over: the watch ends at its next pass that hits every key (its 6 minutes
	// are a limit, not a wait).
	kubectl("-n", ns, "exec", watcher.Name, "--", "/usr/local/bin/memcache-client", "-op", "stop")
	Eventually(podPhase(watcher), time.Minute, poll).Should(Or(Equal(corev1.PodSucceeded), Equal(corev1.PodFailed)))
	var watched struct{ Passes []watchPass }
	clientResult(watcher, &watched)
	for _, p := range watched.Passes {
		fmt.Fprintf(GinkgoWriter, "%s: %d hits, %d misses, %d failures %v\n", p.At.Format(time.TimeOnly), p.Hits, p.Misses, p.Failures, p.PerServer)
	}
	// The first passes store the keys (cache-aside: every key misses once); the rollout is judged
	// from the first pass that hit every key on.
	warm := slices.IndexFunc(watched.Passes, func(p watchPass) bool { return p.Requests > 0 && p.Hits == p.Requests })
	Expect(warm).To(BeNumerically(">=", 0), "the keys were all stored and read back before the rollout")
	cold, worst := map[string]bool{}, 0
	for _, p := range watched.Passes[warm:] {
		worst = max(worst, len(p.PerServer))
		for s := range p.PerServer {
			cold[s] = true
		}
	}
	Expect(worst).To(BeNumerically("<=", 1), "at most one server's keys are cold or unreachable at any moment")
	last := watched.Passes[len(watched.Passes)-1]
	Expect(last.Hits).To(Equal(last.Requests), "the watch ended on a pass that hit every key: stopped, not out of time")
	Expect(cold).To(HaveLen(3), "each server was replaced in its turn")

	By("adding a fourth server: the next name, and most keys stay where they were")
	runClient(ns, "store-before-scale", &stored, "-servers", list, "-op", "store", "-keys", "10000", "-prefix", "scale")
	kubectl("-n", ns, "patch", "memcached", key.Name, "--type=merge", "-p", `{"spec":{"replicaCount":4}}`)
	ready(4)
	grown := status(Default).Servers
	Expect(grown[:3]).To(Equal(servers))
	Expect(grown[3]).To(Equal(fmt.Sprintf("cache-memcached-3.cache-memcached-headless.%s.svc:11211", ns)))
	runClient(ns, "read-after-scale", &read, "-servers", strings.Join(grown, ","), "-op", "read", "-keys", "10000", "-prefix", "scale")
	Expect(read.Failures).To(BeZero())
	Expect(read.Hits).To(BeNumerically(">=", 7000), "a consistent hash keeps about 3/4 of the keys when a fourth server comes")
}

// hostsAndPorts are the servers' first DNS labels (their pods' names) and ports: SRV names them
// fully qualified, status relative to the cluster's domain.
func hostsAndPorts(servers []string) []string {
	var out []string
	for _, s := range servers {
		host, port, _ := strings.Cut(s, ":")
		first, _, _ := strings.Cut(host, ".")
		out = append(out, first+":"+port)
	}
	return out
}
