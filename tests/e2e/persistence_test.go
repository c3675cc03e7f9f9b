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
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// provePersistence keeps a cache's items across the replacement of its pods (spec.persistence,
// on the local cluster's node-local volumes), as an application sees them through a hashing
// client over the server list:
//   - turned on for a running cache of 3 servers: the StatefulSet is replaced, the servers keep
//     their names, each rolls out once, starting empty;
//   - 30000 keys stored, then each server's pod evicted in turn through the eviction API, as a
//     drain does: each new pod restores its server's items from its volume (CacheWarm Restored),
//     and at least 99% of the keys are read back;
//   - a server held away (its new pod not scheduled) while the application updates every key:
//     its updates fail, and once it is back it serves the values of its stop, as the docs say;
//   - a server held away longer than maxAgeSeconds starts empty, and says why;
//   - memcached killed in its pod (no save): it starts empty, though its volume still holds the
//     file of its last stop (a copy is restored once);
//   - turned off: the servers keep their names, their claims are deleted.
func provePersistence() {
	const (
		ns     = "memcached-persist"
		maxAge = 30
	)
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
	statefulSet := func(g Gomega) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{}
		g.Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: ns, Name: "cache-memcached"}, s)).To(Succeed())
		return s
	}
	before, uids := statefulSet(Default), podUIDs(ns, selector)
	cacheWarm := func(g Gomega) cachev1.HelmCondition { return memcachedConditionOf(g, key, "CacheWarm") }

	By("turning persistence on: the StatefulSet replaced, the servers' names kept, each rolled out once")
	kubectl("-n", ns, "patch", "memcached", key.Name, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"persistence":{"enabled":true,"maxAgeSeconds":%d}}}`, maxAge))
	Eventually(func(g Gomega) {
		s := statefulSet(g)
		g.Expect(s.UID).NotTo(Equal(before.UID))
		g.Expect(s.Status.UpdatedReplicas).To(BeEquivalentTo(3))
		g.Expect(s.Status.CurrentRevision).To(Equal(s.Status.UpdateRevision))
		pods := &corev1.PodList{}
		g.Expect(k8s.List(ctx(), pods, client.InNamespace(ns), client.MatchingLabels(selector))).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(3))
		for _, p := range pods.Items {
			g.Expect(p.UID).NotTo(Equal(uids[p.Name]), "%s is a new pod", p.Name)
			g.Expect(p.Spec.Volumes).To(ContainElement(HaveField("PersistentVolumeClaim.ClaimName", "memory-copy-"+p.Name)))
		}
	}, 4*time.Minute, poll).Should(Succeed())
	Expect(awaitServers(key, 3)).To(Equal(servers), "the servers keep their names")
	Eventually(eventReasonsOf(ns, key.Name), timeout, poll).Should(ContainElement("VolumesChanged"))

	By("storing 30000 keys over the 3 servers")
	var stored clientCounts
	runClient(ns, "store", &stored, "-servers", list, "-op", "store", "-keys", "30000")
	Expect(stored).To(And(HaveField("Hits", 30000), HaveField("Failures", 0)))

	By("evicting each server's pod in turn, as a drain does: each new pod restores its items")
	for _, name := range []string{"cache-memcached-2", "cache-memcached-1", "cache-memcached-0"} {
		old := podUIDs(ns, selector)[name]
		evict(ns, name)
		Eventually(cacheWarm, 2*time.Minute, poll).Should(And(HaveField("Reason", cachev1.CacheRestored),
			HaveField("Message", ContainSubstring("server "+name+"'s pod was replaced and the new one restored"))))
		Expect(podUIDs(ns, selector)[name]).NotTo(Equal(old))
		awaitServers(key, 3)
	}
	expectReadBack(ns, "read-evicted", list, "key", 30000, 29700)
	Eventually(eventReasonsOf(ns, key.Name), timeout, poll).Should(ContainElement(cachev1.CacheRestored))

	By("a server away while the application updates every key: back, it serves the values of its stop")
	// The application's client drops the server it cannot reach from its list meanwhile (as
	// failover clients do): its keys' updates go to the others, and it misses them.
	away := "cache-memcached-1"
	release := holdNextPod(ns, away)
	evict(ns, away)
	Eventually(func(g Gomega) []corev1.PodSchedulingGate { return pod(g, ns, away).Spec.SchedulingGates }, timeout, poll).ShouldNot(BeEmpty(), "its new pod waits")
	var others []string
	for _, s := range servers {
		if podOf(s) != away {
			others = append(others, s)
		}
	}
	var updated clientCounts
	runClient(ns, "update", &updated, "-servers", strings.Join(others, ","), "-op", "store", "-keys", "30000", "-generation", "2")
	Expect(updated).To(And(HaveField("Hits", 30000), HaveField("Failures", 0)))
	release()
	Eventually(cacheWarm, 2*time.Minute, poll).Should(And(HaveField("Reason", cachev1.CacheRestored),
		HaveField("Message", ContainSubstring("server "+away+"'s pod was replaced and the new one restored"))))
	var read clientCounts
	runClient(ns, "read-stale", &read, "-servers", list, "-op", "read", "-keys", "30000", "-generation", "2")
	Expect(read.Failures).To(BeZero())
	Expect(read.Wrong).To(And(BeNumerically(">", 5000), Equal(read.PerServer[serverOf(servers, away)])),
		"the server back serves its keys' values of before the update it missed (stale), and only it does")
	Expect(read.Hits+read.Wrong).To(BeNumerically(">=", 29700), "the others serve the update")
	var again clientCounts
	runClient(ns, "store-after-stale", &again, "-servers", list, "-op", "store", "-keys", "30000")
	Expect(again).To(And(HaveField("Hits", 30000), HaveField("Failures", 0)), "the application writes every key again")

	By("a server away longer than maxAgeSeconds starts empty, and says why")
	late := "cache-memcached-0"
	release = holdNextPod(ns, late)
	evict(ns, late)
	Eventually(func(g Gomega) []corev1.PodSchedulingGate { return pod(g, ns, late).Spec.SchedulingGates }, timeout, poll).ShouldNot(BeEmpty())
	time.Sleep((maxAge + 5) * time.Second)
	release()
	Eventually(cacheWarm, 2*time.Minute, poll).Should(And(HaveField("Reason", cachev1.WayStartedEmpty),
		HaveField("Message", And(ContainSubstring("server "+late+" started empty"), ContainSubstring("did not restore the copy")))))
	Eventually(func() string { return kubectl("-n", ns, "logs", late, "-c", "memcached") }, timeout, poll).Should(
		MatchRegexp(`memory-copy: starting empty: the copy on the volume was saved [0-9]+ s ago, more than %d s`, maxAge))
	awaitServers(key, 3)
	expectEmptyServer(ns, list, late, servers)

	var again2 clientCounts
	runClient(ns, "store-after-late", &again2, "-servers", list, "-op", "store", "-keys", "30000")
	Expect(again2).To(And(HaveField("Hits", 30000), HaveField("Failures", 0)))

	By("memcached killed in its pod, with no save: it starts empty, its volume's old file not restored again")
	killed := "cache-memcached-2"
	restarts := restartsOf(ns, selector)[killed]
	// The exec's shell may die with the container it kills (exit 137, or no container to answer):
	// its own result says nothing; the restart below is what shows that memcached was killed.
	out, err := kubectlOut("-n", ns, "exec", killed, "-c", "memcached", "--", "sh", "-c",
		`for p in /proc/[0-9]*; do [ "$(cat $p/comm)" != memcached ] || kill -9 ${p#/proc/}; done`)
	if err != nil {
		fmt.Fprintf(GinkgoWriter, "kubectl exec ended with the container: %v\n%s", err, out)
	}
	Eventually(func() int32 { return restartsOf(ns, selector)[killed] }, timeout, poll).Should(Equal(restarts + 1))
	Eventually(cacheWarm, 2*time.Minute, poll).Should(And(HaveField("Reason", cachev1.WayStartedEmpty),
		HaveField("Message", ContainSubstring("server "+killed+" started empty"))))
	awaitServers(key, 3)
	expectEmptyServer(ns, list, killed, servers)
	Expect(kubectl("-n", ns, "logs", killed, "-c", "memcached")).To(And(ContainSubstring("memory-copy: starting empty: the volume holds no copy"),
		Not(ContainSubstring("memory-copy: restoring"))))

	By("turning persistence off: the servers' names kept, their pods without a volume, the claims gone")
	uids = podUIDs(ns, selector)
	kubectl("-n", ns, "patch", "memcached", key.Name, "--type=merge", "-p", `{"spec":{"persistence":{"enabled":false}}}`)
	Eventually(func(g Gomega) {
		s := statefulSet(g)
		g.Expect(s.Spec.VolumeClaimTemplates).To(BeEmpty())
		g.Expect(s.Status.UpdatedReplicas).To(BeEquivalentTo(3))
		g.Expect(s.Status.CurrentRevision).To(Equal(s.Status.UpdateRevision))
		pods := &corev1.PodList{}
		g.Expect(k8s.List(ctx(), pods, client.InNamespace(ns), client.MatchingLabels(selector))).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(3))
		for _, p := range pods.Items {
			g.Expect(p.UID).NotTo(Equal(uids[p.Name]), "%s is a new pod", p.Name)
			g.Expect(p.Spec.Volumes).NotTo(ContainElement(HaveField("Name", "memory-copy")))
		}
		claims := &corev1.PersistentVolumeClaimList{}
		g.Expect(k8s.List(ctx(), claims, client.InNamespace(ns))).To(Succeed())
		g.Expect(claims.Items).To(BeEmpty(), "the claims the StatefulSet made are deleted once their pods stop")
	}, 4*time.Minute, poll).Should(Succeed())
	Expect(awaitServers(key, 3)).To(Equal(servers), "the servers keep their names")
}

// expectEmptyServer reads the 30000 keys back and expects those of server name alone to be
// missed: it started empty.
func expectEmptyServer(ns, list, name string, servers []string) {
	GinkgoHelper()
	var read clientCounts
	runClient(ns, "read-"+name+"-"+strconv.Itoa(int(time.Now().Unix())), &read, "-servers", list, "-op", "read", "-keys", "30000")
	Expect(read.Failures).To(BeZero())
	missed := read.PerServer[serverOf(servers, name)]
	Expect(missed).To(BeNumerically(">", 5000), "%s started empty: its keys are missed", name)
	Expect(read.Misses+read.Wrong).To(Equal(missed), "only %s's keys are missed", name)
}

// holdNextPod makes the next pod named name in ns wait unscheduled, as a pod waits for a node
// during a drain (a MutatingAdmissionPolicy gives it a scheduling gate), and returns what lets it
// go (the gate removed, the policy deleted).
func holdNextPod(ns, name string) (release func()) {
	GinkgoHelper()
	policy := "e2e-hold-" + ns + "-" + name
	kubectlIn(fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata: {name: %[1]s}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  matchConditions:
  - {name: the-server, expression: "object.metadata.name == '%[3]s'"}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >-
        Object{spec: Object.spec{schedulingGates: [Object.spec.schedulingGates{name: "e2e.memcached-operator/hold"}]}}
  reinvocationPolicy: Never
  failurePolicy: Fail
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata: {name: %[1]s}
spec:
  policyName: %[1]s
  matchResources:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: %[2]s}
`, policy, ns, name), "apply", "-f", "-")
	remove := func() {
		_, _ = kubectlOut("delete", "mutatingadmissionpolicybinding,mutatingadmissionpolicy", policy, "--ignore-not-found")
	}
	DeferCleanup(remove)
	// The API server applies a new policy within a second or so: a pod made before would pass.
	time.Sleep(3 * time.Second)
	return func() {
		GinkgoHelper()
		remove()
		kubectl("-n", ns, "patch", "pod", name, "--type=json", "-p", `[{"op":"remove","path":"/spec/schedulingGates"}]`)
	}
}

// pod is pod ns/name as it is now.
func pod(g Gomega, ns, name string) *corev1.Pod {
	p := &corev1.Pod{}
	g.Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: ns, Name: name}, p)).To(Succeed())
	return p
}
