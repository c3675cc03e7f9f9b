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
	"os"
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

// proveCacheKept stores 30000 keys with a hashing client over the server list of a cache of 3
// servers that restarts warm (keepCacheAcross Restarts), makes the changes the operator rolls out,
// and reads the keys back after each:
//   - pod annotations: written onto the running pods, every key read back, no pod replaced, no
//     container restarted;
//   - a new memcached image (the same memcached under another tag): each server's memcached
//     restarted once in its pod, the highest first, at least 99% read back;
//   - another item memory: memcached cannot restore into it, so the servers roll out, and
//     CacheWarm says each started empty, and why.
func proveCacheKept() {
	const ns = "memcached-warm"
	retagged := os.Getenv("E2E_MEMCACHED_RETAGGED_IMG")
	Expect(retagged).NotTo(BeEmpty(), "E2E_MEMCACHED_RETAGGED_IMG names the memcached image under a second tag: run `make test-e2e`")
	kubectl("create", "namespace", ns)
	DeferCleanup(deleteNamespace, ns)
	key := types.NamespacedName{Namespace: ns, Name: "cache"}
	selector := map[string]string{"app.kubernetes.io/instance": key.Name, "app.kubernetes.io/name": "memcached"}
	repo, tag := splitImage(memcachedImage)
	Expect(k8s.Create(ctx(), &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
		Spec: cachev1.MemcachedSpec{ReplicaCount: ptr.To[int32](3), MinReadySeconds: ptr.To[int32](2), KeepCacheAcross: cachev1.KeepAcrossRestarts,
			Image: &cachev1.ImageSpec{Repository: repo, Tag: tag}, Memcached: &cachev1.MemcachedServer{MaxMemoryMB: 64}}})).To(Succeed())
	servers := awaitServers(key, 3)
	list := strings.Join(servers, ",")

	By("storing 30000 keys over the 3 servers")
	var stored clientCounts
	runClient(ns, "store", &stored, "-servers", list, "-op", "store", "-keys", "30000")
	Expect(stored).To(And(HaveField("Hits", 30000), HaveField("Failures", 0)))
	uids, restarts := podUIDs(ns, selector), restartsOf(ns, selector)
	Expect(uids).To(HaveLen(3))
	readBack := func(name string, least int) {
		GinkgoHelper()
		expectReadBack(ns, name, list, "key", 30000, least)
	}
	awaitCacheWarm := func(reason string, parts ...string) {
		GinkgoHelper()
		matchers := []OmegaMatcher{HaveField("Reason", reason)}
		for _, part := range parts {
			matchers = append(matchers, HaveField("Message", ContainSubstring(part)))
		}
		Eventually(func(g Gomega) cachev1.HelmCondition { return memcachedConditionOf(g, key, "CacheWarm") }, timeout, poll).Should(And(matchers...))
	}

	By("a change of pod annotations: written onto the running servers")
	kubectl("-n", ns, "patch", "memcached", key.Name, "--type=merge", "-p", `{"spec":{"podAnnotations":{"example.com/team":"web"}}}`)
	awaitCacheWarm("InPlace", "made in place")
	Expect(podUIDs(ns, selector)).To(Equal(uids), "no pod was replaced")
	Expect(restartsOf(ns, selector)).To(Equal(restarts), "no container restarted")
	for name := range uids {
		pod := &corev1.Pod{}
		Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: ns, Name: name}, pod)).To(Succeed())
		Expect(pod.Annotations).To(HaveKeyWithValue("example.com/team", "web"), "the running pod %s has it", name)
	}
	readBack("read-annotations", 30000)

	By("a new memcached image: each server restarted in its pod with its items, one at a time")
	_, newTag := splitImage(retagged)
	kubectl("-n", ns, "patch", "memcached", key.Name, "--type=merge", "-p", `{"spec":{"image":{"tag":"`+newTag+`"}}}`)
	awaitCacheWarm("WarmRestart", "every server restarted in its pod with its items")
	Expect(podUIDs(ns, selector)).To(Equal(uids), "no pod was replaced")
	pods := &corev1.PodList{}
	Expect(k8s.List(ctx(), pods, client.InNamespace(ns), client.MatchingLabels(selector))).To(Succeed())
	started := map[string]time.Time{}
	for _, p := range pods.Items {
		// (The kubelet reports the image by its first name of that digest: not the tag.)
		Expect(p.Spec.Containers[0].Image).To(Equal(retagged), "%s runs the new image", p.Name)
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "memcached" {
				Expect(cs.RestartCount).To(Equal(restarts[p.Name]+1), "%s's memcached restarted once", p.Name)
				Expect(cs.State.Running).NotTo(BeNil())
				started[p.Name] = cs.State.Running.StartedAt.Time
			}
		}
	}
	Expect(started["cache-memcached-2"].Before(started["cache-memcached-1"])).To(BeTrue(), "server 2 restarted before server 1: %v", started)
	Expect(started["cache-memcached-1"].Before(started["cache-memcached-0"])).To(BeTrue(), "server 1 restarted before server 0: %v", started)
	readBack("read-image", 29700)

	By("another item memory: rolled out, each server starting empty, and said so")
	kubectl("-n", ns, "patch", "memcached", key.Name, "--type=merge", "-p", `{"spec":{"memcached":{"maxMemoryMB":96}}}`)
	awaitCacheWarm("StartedEmpty", "item memory 64 → 96 MiB", "rolled out one server at a time, each started empty",
		"memcached restores its items only into the item memory it saved them from")
	for name, uid := range podUIDs(ns, selector) {
		Expect(uid).NotTo(Equal(uids[name]), "%s is a new pod", name)
	}
	Eventually(eventReasonsOf(ns, key.Name), timeout, poll).Should(ContainElements("InPlace", "WarmRestart", "StartedEmpty"))
}

// splitImage splits repository:tag.
func splitImage(ref string) (repo, tag string) {
	i := strings.LastIndex(ref, ":")
	return ref[:i], ref[i+1:]
}
