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

package controllers_test

import (
	"context"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// spec.persistence on a running cache: a StatefulSet's volume claim templates cannot be updated,
// so the operator replaces it under its name, its pods serving meanwhile (envtest runs no garbage
// collector and no StatefulSet controller: the spec plays the collector's part).
var _ = Describe("Persistence turned on and off for a running cache", func() {
	ctx := context.Background()

	It("replaces the StatefulSet under its name, its pods serving meanwhile, and says each server starts empty once", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "persist"}
		spec := "  replicaCount: 2\n  minReadySeconds: 0\n  keepCacheAcross: Restarts\n"
		createMemcached(ctx, key, spec)
		servers := playServers(ctx, key, []string{startMemcached(64), startMemcached(64)}, "rev-a")
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionAvailable), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		before := getStatefulSet(Default, ctx, servers)
		Expect(before.Spec.VolumeClaimTemplates).To(BeEmpty())
		pods := []types.UID{serverPod(Default, ctx, servers, 0).UID, serverPod(Default, ctx, servers, 1).UID}

		updateSpec(ctx, key, spec+"  persistence: {enabled: true, size: 100Mi}\n")
		collectOrphaning(ctx, servers, before.UID)

		By("finding a new StatefulSet of the same name with a volume per server, the pods as they were")
		Eventually(func(g Gomega) {
			s := getStatefulSet(g, ctx, servers)
			g.Expect(s.UID).NotTo(Equal(before.UID))
			g.Expect(s.Spec.VolumeClaimTemplates).To(ConsistOf(And(HaveField("Name", "memory-copy"),
				HaveField("Spec.Resources.Requests", HaveKeyWithValue(corev1.ResourceStorage, HaveField("String()", "100Mi"))))))
		}, timeout, interval).Should(Succeed())
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Reason", "UpgradeSuccessful"))
		for i, uid := range pods {
			Expect(serverPod(Default, ctx, servers, i).UID).To(Equal(uid), "server %d's pod serves on until the rollout replaces it", i)
		}
		Expect(changeOf(Default, ctx, servers)).To(And(HaveField("Way", cachev1.WayStartedEmpty), HaveField("Phase", cachev1.RolloutRolledOut)),
			"each server starts empty once, and status says so")
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElements("VolumesChanged", cachev1.WayStartedEmpty))

		By("the new StatefulSet adopting the pods, which cannot take its volumes: the operator evicts the lowest, the PodDisruptionBudget allowing")
		adopter := getStatefulSet(Default, ctx, servers)
		for i := range pods {
			p := serverPod(Default, ctx, servers, i)
			p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(adopter, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}
			Expect(k8sClient.Update(ctx, p)).To(Succeed())
		}
		Consistently(func(g Gomega) { serverPod(g, ctx, servers, 0) }, 2*time.Second, interval).Should(Succeed(),
			"no eviction while the PodDisruptionBudget allows none (envtest runs no disruption controller)")
		pdb := &policyv1.PodDisruptionBudget{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: servers.Name}, pdb)).To(Succeed())
		pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 1, CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2}
		Expect(k8sClient.Status().Update(ctx, pdb)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: servers.Name + "-0"}, &corev1.Pod{}))
		}, timeout, interval).Should(BeTrue(), "server 0 evicted (the StatefulSet controller stops at the lowest it cannot update)")
		Expect(serverPod(Default, ctx, servers, 1).UID).To(Equal(pods[1]), "one server at a time: server 1 waits for server 0")
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement("ServerReplaced"))

		By("a size change is a change of the claims too")
		replaced := getStatefulSet(Default, ctx, servers)
		updateSpec(ctx, key, spec+"  persistence: {enabled: true, size: 200Mi}\n")
		collectOrphaning(ctx, servers, replaced.UID)
		Eventually(func(g Gomega) {
			s := getStatefulSet(g, ctx, servers)
			g.Expect(s.UID).NotTo(Equal(replaced.UID))
			g.Expect(s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String()).To(Equal("200Mi"))
		}, timeout, interval).Should(Succeed())
		Eventually(eventMessages(ctx, "Memcached", key, "VolumesChanged"), timeout, interval).Should(ContainElement(
			ContainSubstring("its pods serve on with the claims they have")), "a size applies to claims made after it, and the Event says so")
	})

	It("turned off, deletes the claims its StatefulSet made, never a tenant's claim of the same name", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "persist"}
		spec := "  replicaCount: 2\n  minReadySeconds: 0\n  keepCacheAcross: Restarts\n"
		createMemcached(ctx, key, spec+"  persistence: {enabled: true, size: 100Mi}\n")
		servers := playServers(ctx, key, []string{startMemcached(64), startMemcached(64)}, "rev-a")
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionAvailable), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		live := getStatefulSet(Default, ctx, servers)
		claim := func(name string, owner *appsv1.StatefulSet) *corev1.PersistentVolumeClaim {
			pvc := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: name, Labels: live.Spec.Selector.MatchLabels},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("100Mi")}}},
			}
			if owner != nil { // as the StatefulSet controller makes it under the chart's retention policy
				pvc.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}
			}
			Expect(k8sClient.Create(ctx, pvc)).To(Succeed())
			return pvc
		}
		made := claim("memory-copy-"+servers.Name+"-0", live)
		tenants := claim("memory-copy-"+servers.Name+"-1", nil) // a namespace editor's, named as the next would be

		updateSpec(ctx, key, spec)
		Eventually(func(g Gomega) {
			pvc := &corev1.PersistentVolumeClaim{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(made), pvc)).To(Succeed())
			g.Expect(pvc.DeletionTimestamp).NotTo(BeNil())
		}, timeout, interval).Should(Succeed(), "the claim the StatefulSet made is deleted (its protection keeps it until its pod stops)")
		collectOrphaning(ctx, servers, live.UID)
		Eventually(func(g Gomega) {
			g.Expect(getStatefulSet(g, ctx, servers).Spec.VolumeClaimTemplates).To(BeEmpty())
		}, timeout, interval).Should(Succeed())
		kept := &corev1.PersistentVolumeClaim{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(tenants), kept)).To(Succeed())
		Expect(kept.DeletionTimestamp).To(BeNil(), "a tenant's claim stays")
		Eventually(eventMessages(ctx, "Memcached", key, "VolumesChanged"), timeout, interval).Should(ContainElement(
			ContainSubstring("the claims it no longer asks for (" + made.Name + ") are deleted once their pods stop")))
	})

	It("says a server whose new pod restored its items from its volume came back with them, and for how long it was away; one that did not, started empty", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "persist"}
		w := startWarmMemcached(64)
		createMemcached(ctx, key, "  replicaCount: 1\n  minReadySeconds: 0\n  keepCacheAcross: Restarts\n  persistence: {enabled: true}\n")
		servers := playServers(ctx, key, []string{w.host}, "rev-a")
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionAvailable), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		storeKeys(w.host, "k", 500)
		old := serverPod(Default, ctx, servers, 0)
		Eventually(serverEntry(ctx, key, old.Name), timeout, interval).Should(HaveField("PodUID", old.UID))

		By("its pod asked to stop, as an eviction does (a pod on a node stops within its grace period)")
		Expect(k8sClient.SubResource("binding").Create(ctx, old, &corev1.Binding{Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}})).To(Succeed())
		Expect(k8sClient.Delete(ctx, old, client.GracePeriodSeconds(30))).To(Succeed())
		Eventually(serverEntry(ctx, key, old.Name), timeout, interval).Should(HaveField("StopTime", Not(BeNil())), "the stop is recorded")

		By("a new pod whose memcached restored the copy")
		w.restart(64)
		replacePod(ctx, servers, old, w.started)
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCacheWarm), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", cachev1.CacheRestored),
			HaveField("Message", And(ContainSubstring("server persist-memcached-0's pod was replaced and the new one restored 500 items from its volume"),
				MatchRegexp(`away for [0-9]+s`)))))
		Expect(serverEntry(ctx, key, old.Name)(Default)).To(And(HaveField("StopTime", BeNil()), HaveField("StartedEmpty", BeNil()),
			HaveField("Restored.AwaySeconds", HaveValue(BeNumerically("<", 60)))))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement(cachev1.CacheRestored))

		By("a new pod whose memcached did not (killed: no copy)")
		second := serverPod(Default, ctx, servers, 0)
		w.replace(64)
		replacePod(ctx, servers, second, w.started)
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCacheWarm), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", cachev1.WayStartedEmpty),
			HaveField("Message", ContainSubstring("did not restore the copy of its memory file from its volume"))))
		Expect(serverEntry(ctx, key, old.Name)(Default)).To(And(HaveField("StartedEmpty.Reason", cachev1.EmptyPodReplaced), HaveField("StopTime", BeNil())),
			"the new pod's stop is its own, once asked")
	})

	It("refuses persistence without keepCacheAcross Restarts, and says why", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "persist"}
		createMemcached(ctx, key, "  replicaCount: 1\n  persistence: {enabled: true}\n")
		Eventually(memcachedCondition(ctx, key, "Irreconcilable"), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Message", ContainSubstring("persistence needs keepCacheAcross Restarts"))))
	})
})

// serverEntry is status.rollout's entry of the server named name.
func serverEntry(ctx context.Context, key types.NamespacedName, name string) func(g Gomega) cachev1.ServerRollout {
	return func(g Gomega) cachev1.ServerRollout {
		mc := &cachev1.Memcached{}
		g.Expect(k8sClient.Get(ctx, key, mc)).To(Succeed())
		g.Expect(mc.Status.Rollout).NotTo(BeNil())
		for _, e := range mc.Status.Rollout.Servers {
			if e.Name == name {
				return e
			}
		}
		g.Expect(name).To(BeEmpty(), "status.rollout has no entry of %s", name)
		return cachev1.ServerRollout{}
	}
}

// replacePod plays the StatefulSet controller, which makes a server's pod again once the old one
// is gone: the old one's deletion finished (as its kubelet does), a new one at the same address.
func replacePod(ctx context.Context, s *appsv1.StatefulSet, old *corev1.Pod, started time.Time) {
	GinkgoHelper()
	Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, old, client.GracePeriodSeconds(0)))).To(Succeed())
	Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(old), &corev1.Pod{}))
	}, timeout, interval).Should(BeTrue())
	n, err := strconv.Atoi(strings.TrimPrefix(old.Name, s.Name+"-"))
	Expect(err).NotTo(HaveOccurred())
	addServerPodStarted(ctx, s, n, old.Status.PodIP, old.Labels[appsv1.StatefulSetRevisionLabel], started)
}

// collectOrphaning plays the garbage collector (envtest runs none) for the StatefulSet of UID uid,
// once the operator deletes it with its pods orphaned.
func collectOrphaning(ctx context.Context, s *appsv1.StatefulSet, uid types.UID) {
	GinkgoHelper()
	By("acting as the garbage collector for the StatefulSet the operator deletes with its pods orphaned")
	Eventually(func(g Gomega) {
		live := getStatefulSet(g, ctx, s)
		g.Expect(live.UID).To(Equal(uid))
		g.Expect(live.DeletionTimestamp).NotTo(BeNil(), "the StatefulSet is being deleted")
		g.Expect(live.Finalizers).To(ContainElement(metav1.FinalizerOrphanDependents))
		live.Finalizers = nil
		g.Expect(k8sClient.Update(ctx, live)).To(Succeed())
	}, timeout, interval).Should(Succeed())
}
