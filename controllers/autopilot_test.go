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
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// The autopilot, with the stats controller reading real memcacheds (one per pod, at statsPort of
// a loopback address of its own): overfilled, they evict, and the autopilot steps.
var _ = Describe("The autopilot", func() {
	ctx := context.Background()
	const stepTimeout = 90 * time.Second

	It("refuses bounds that allow no size: at admission where it can, else in status", func() {
		ns := newNamespace(ctx)
		err := k8sClient.Create(ctx, cr("Memcached", ns, "crossed", "  autoscaling: {enabled: true, minReplicas: 3, maxReplicas: 2}\n"))
		Expect(err).To(MatchError(ContainSubstring("autoscaling.minReplicas cannot be above maxReplicas")))
		err = k8sClient.Create(ctx, cr("Memcached", ns, "slow", "  autoscaling: {enabled: true, coolDown: 1s}\n"))
		Expect(err).To(MatchError(ContainSubstring("coolDown must be between 10s and 24h")))

		key := types.NamespacedName{Namespace: ns, Name: "below"}
		createMemcached(ctx, key, "  memcached: {maxMemoryMB: 128}\n  autoscaling: {enabled: true, maxMemoryMB: 64}\n")
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionScalingLimited), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "InvalidBounds"),
			HaveField("Message", ContainSubstring("autoscaling.maxMemoryMB 64 is below memcached.maxMemoryMB 128"))))
		Expect(memcachedStatus(ctx, key)(Default).Autopilot).To(BeNil(), "the spec's size applies")
	})

	It("grows the memory in place when the servers evict, then adds a server: one step per cool-down, each a condition, an Event and a metric", func() {
		skipUnlessResizeServed(cfg)
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "evicting"}
		host := startMemcached(32)
		createMemcached(ctx, key, "  replicaCount: 1\n  minReadySeconds: 0\n  memcached: {maxMemoryMB: 32}\n"+
			"  autoscaling: {enabled: true, maxReplicas: 2, maxMemoryMB: 64, scaleUpAfter: 10s, coolDown: 10s}\n")
		servers := playServers(ctx, key, []string{host}, "rev-32")
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionScalingActive), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "WithinBounds")))
		Expect(memcachedStatus(ctx, key)(Default).Autopilot).To(HaveValue(And(HaveField("Replicas", BeEquivalentTo(1)), HaveField("MaxMemoryMB", BeEquivalentTo(32)))))

		By("overfilling the server: after 10s of evictions, memory doubles, in place")
		DeferCleanup(overfill(host))
		Eventually(func(g Gomega) *cachev1.AutopilotStatus { return memcachedStatus(ctx, key)(g).Autopilot }, stepTimeout, interval).Should(HaveValue(And(
			HaveField("MaxMemoryMB", BeEquivalentTo(64)), HaveField("Replicas", BeEquivalentTo(1)),
			HaveField("LastStep", ContainSubstring("item memory per server 32 → 64 MiB, in place")))))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement("MemoryGrown"))
		mc := &cachev1.Memcached{}
		Expect(k8sClient.Get(ctx, key, mc)).To(Succeed())
		Expect(mc.Spec.Memcached.MaxMemoryMB).To(BeEquivalentTo(32), "the spec stays what the user asked")
		Eventually(func(g Gomega) {
			s := getStatefulSet(g, ctx, servers)
			g.Expect(s.Spec.Template.Spec.Containers[0].Args).To(ContainElements("-m", "64"), "the chart renders the autopilot's choice")
			g.Expect(changeOf(g, ctx, servers)).To(HaveField("Memory.ToMB", BeEquivalentTo(64)), "in place")
		}, timeout, interval).Should(Succeed())
		setServerRevisions(ctx, servers, "rev-32", "rev-64", 0)
		Eventually(podMemoryLimit(ctx, servers, 0), timeout, interval).Should(Equal("96Mi"))
		kubeletResized(ctx, servers, 0)
		Eventually(func() int { return memoryLimitMB(host) }, timeout, interval).Should(Equal(64))
		awaitComplete(ctx, servers)
		setServerRevisions(ctx, servers, "rev-64", "rev-64", 1)

		By("still evicting at maxMemoryMB: a server is added")
		Eventually(func(g Gomega) *cachev1.AutopilotStatus { return memcachedStatus(ctx, key)(g).Autopilot }, stepTimeout, interval).Should(HaveValue(And(
			HaveField("Replicas", BeEquivalentTo(2)), HaveField("MaxMemoryMB", BeEquivalentTo(64)),
			HaveField("LastStep", ContainSubstring("servers 1 → 2")))))
		Eventually(func(g Gomega) *int32 { return getStatefulSet(g, ctx, servers).Spec.Replicas }, timeout, interval).Should(HaveValue(BeEquivalentTo(2)))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement("ServerAdded"))
		first := memcachedStatus(ctx, key)(Default).Autopilot.LastStepTime
		Expect(first).NotTo(BeNil())
		Expect(autopilotSeries(key)).To(And(
			HaveKeyWithValue("memcached_operator_autopilot_steps_total/grow_memory", 1.0),
			HaveKeyWithValue("memcached_operator_autopilot_steps_total/add_server", 1.0),
			HaveKeyWithValue("memcached_operator_autopilot_replicas", 2.0),
			HaveKeyWithValue("memcached_operator_autopilot_item_memory_bytes", float64(64<<20))))

		By("at its bounds, it says so and steps no more")
		addServerPod2(ctx, servers)
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionScalingLimited), stepTimeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "AtMaximum"),
			HaveField("Message", ContainSubstring("at its bounds (maxReplicas 2, maxMemoryMB 64)"))))
	})

	It("removes the highest server when the servers use little of their memory, and stops at minReplicas", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "idle"}
		hosts := []string{startMemcached(64), startMemcached(64)}
		createMemcached(ctx, key, "  replicaCount: 2\n  minReadySeconds: 0\n"+
			"  autoscaling: {enabled: true, minReplicas: 1, scaleInAfter: 10s, coolDown: 10s}\n")
		servers := playServers(ctx, key, hosts, "rev-a")
		Eventually(func(g Gomega) *cachev1.AutopilotStatus { return memcachedStatus(ctx, key)(g).Autopilot }, stepTimeout, interval).Should(HaveValue(And(
			HaveField("Replicas", BeEquivalentTo(1)), HaveField("LastStep", ContainSubstring("servers 2 → 1, the highest removed")))))
		Eventually(func(g Gomega) *int32 { return getStatefulSet(g, ctx, servers).Spec.Replicas }, timeout, interval).Should(HaveValue(BeEquivalentTo(1)))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement("ServerRemoved"))
		Expect(autopilotSeries(key)).To(HaveKeyWithValue("memcached_operator_autopilot_steps_total/remove_server", 1.0))

		By("the StatefulSet removes the highest server; at minReplicas and the spec's memory, nothing more")
		Expect(k8sClient.Delete(ctx, serverPod(Default, ctx, servers, 1))).To(Succeed())
		setServerRevisions(ctx, servers, "rev-a", "rev-a", 1)
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionScalingActive), stepTimeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "AtMinimum")))
		Expect(memcachedCondition(ctx, key, cachev1.ConditionScalingLimited)(Default)).To(HaveField("Status", metav1.ConditionFalse))
		Expect(memcachedStatus(ctx, key)(Default).Autopilot).To(HaveValue(HaveField("Replicas", BeEquivalentTo(1))))

		By("bounds that allow no size keep the last choice: no server comes back")
		updateSpec(ctx, key, "  replicaCount: 2\n  minReadySeconds: 0\n  autoscaling: {enabled: true, minReplicas: 1, maxMemoryMB: 32, scaleInAfter: 10s, coolDown: 10s}\n")
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionScalingLimited), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "InvalidBounds")))
		Consistently(func(g Gomega) {
			g.Expect(memcachedStatus(ctx, key)(g).Autopilot).To(HaveValue(HaveField("Replicas", BeEquivalentTo(1))))
			g.Expect(getStatefulSet(g, ctx, servers).Spec.Replicas).To(HaveValue(BeEquivalentTo(1)))
		}, 3*time.Second, interval).Should(Succeed())
	})

	It("keeps its choice across an operator restart: the same render, no new release revision, nothing replaced", func() {
		skipUnlessResizeServed(cfg)
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "restart"}
		host := startMemcached(32)
		createMemcached(ctx, key, "  replicaCount: 1\n  minReadySeconds: 0\n  memcached: {maxMemoryMB: 32}\n"+
			"  autoscaling: {enabled: true, maxMemoryMB: 64, scaleUpAfter: 10s, coolDown: 10s}\n")
		servers := playServers(ctx, key, []string{host}, "rev-32")
		stop := overfill(host)
		Eventually(func(g Gomega) *cachev1.AutopilotStatus { return memcachedStatus(ctx, key)(g).Autopilot }, stepTimeout, interval).Should(
			HaveValue(HaveField("MaxMemoryMB", BeEquivalentTo(64))))
		stop()
		awaitHold(ctx, servers, 64, 1)
		setServerRevisions(ctx, servers, "rev-32", "rev-64", 0)
		Eventually(podMemoryLimit(ctx, servers, 0), timeout, interval).Should(Equal("96Mi"))
		kubeletResized(ctx, servers, 0)
		awaitComplete(ctx, servers)
		setServerRevisions(ctx, servers, "rev-64", "rev-64", 1)
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionProgressing), timeout, interval).Should(HaveField("Reason", "Complete"))
		// Settled before the restart: what the operator still writes after Complete (the release
		// that lets go of the hold) is not the restart's doing.
		var before cachev1.MemcachedStatus
		var generation int64
		Eventually(func(g Gomega) {
			was, wasGeneration := memcachedStatus(ctx, key)(g), getStatefulSet(g, ctx, servers).Generation
			time.Sleep(2 * time.Second)
			before, generation = memcachedStatus(ctx, key)(g), getStatefulSet(g, ctx, servers).Generation
			g.Expect(before.DeployedRelease.Revision).To(Equal(was.DeployedRelease.Revision))
			g.Expect(before.Autopilot).To(Equal(was.Autopilot))
			g.Expect(generation).To(Equal(wasGeneration))
		}, timeout, interval).Should(Succeed())
		pod := serverPod(Default, ctx, servers, 0)

		By("restarting the operator: a new process, with new caches")
		restartOperator()
		// The new process reconciles every CR as it starts; an annotation's change makes sure it
		// has, for this one, before the checks.
		Expect(k8sClient.Patch(ctx, &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}},
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"test.memcached/restarted":"yes"}}}`)))).To(Succeed())
		Consistently(func(g Gomega) {
			now := memcachedStatus(ctx, key)(g)
			g.Expect(now.Autopilot).To(HaveValue(And(HaveField("MaxMemoryMB", BeEquivalentTo(64)), HaveField("Replicas", BeEquivalentTo(1)),
				HaveField("LastStepTime", Equal(before.Autopilot.LastStepTime)))), "the choice is kept")
			g.Expect(now.DeployedRelease.Revision).To(Equal(before.DeployedRelease.Revision), "no upgrade")
			s := getStatefulSet(g, ctx, servers)
			g.Expect(s.Generation).To(Equal(generation), "the StatefulSet is as it was")
			g.Expect(s.Spec.Template.Spec.Containers[0].Args).To(ContainElements("-m", "64"))
			g.Expect(serverPod(g, ctx, servers, 0).UID).To(Equal(pod.UID))
		}, 10*time.Second, interval).Should(Succeed())
	})

	It("does not take a step the namespace's ResourceQuota would refuse, says why once, and takes it when the quota allows", func() {
		skipUnlessResizeServed(cfg)
		ns := newNamespace(ctx)
		key := types.NamespacedName{Namespace: ns, Name: "quota"}
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "memory"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceLimitsMemory: resource.MustParse("80Mi")}}}
		Expect(k8sClient.Create(ctx, quota)).To(Succeed())
		setQuotaStatus(ctx, quota, "0")
		host := startMemcached(32)
		createMemcached(ctx, key, "  replicaCount: 1\n  minReadySeconds: 0\n  memcached: {maxMemoryMB: 32}\n"+
			"  autoscaling: {enabled: true, maxMemoryMB: 64, scaleUpAfter: 10s, coolDown: 10s}\n")
		playServers(ctx, key, []string{host}, "rev-32")
		setQuotaStatus(ctx, quota, "64Mi") // the server's memory limit
		DeferCleanup(overfill(host))

		Eventually(memcachedCondition(ctx, key, cachev1.ConditionScalingLimited), stepTimeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "QuotaExceeded"),
			HaveField("Message", ContainSubstring("ResourceQuota memory allows limits.memory 80Mi, 64Mi is used, and the step needs 32Mi more"))))
		Expect(memcachedStatus(ctx, key)(Default).Autopilot).To(HaveValue(HaveField("MaxMemoryMB", BeEquivalentTo(32))))
		limited := func() int {
			n := 0
			for _, r := range eventReasons(ctx, "Memcached", key)(Default) {
				if r == "ScalingLimited" {
					n++
				}
			}
			return n
		}
		Eventually(limited, timeout, interval).Should(Equal(1))
		Consistently(func() []any {
			return []any{limited(), memcachedStatus(ctx, key)(Default).Autopilot.MaxMemoryMB, autopilotSeries(key)["memcached_operator_autopilot_steps_refused_total/quota"]}
		}, 5*time.Second, interval).Should(Equal([]any{1, int32(32), 1.0}), "refused once, not retried in a loop while the stats are read every second")

		By("the quota raised, the step is taken")
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
			quota.Spec.Hard[corev1.ResourceLimitsMemory] = resource.MustParse("200Mi")
			g.Expect(k8sClient.Update(ctx, quota)).To(Succeed())
		}, timeout, interval).Should(Succeed())
		setQuotaStatus(ctx, quota, "64Mi")
		Eventually(func(g Gomega) *cachev1.AutopilotStatus { return memcachedStatus(ctx, key)(g).Autopilot }, stepTimeout, interval).Should(
			HaveValue(HaveField("MaxMemoryMB", BeEquivalentTo(64))))
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionScalingLimited), timeout, interval).Should(HaveField("Status", metav1.ConditionFalse))
	})
})

// addServerPod2 plays the StatefulSet controller for a second server (ordinal 1) with a memcached
// of its own, which evicts nothing.
func addServerPod2(ctx context.Context, s *appsv1.StatefulSet) string {
	GinkgoHelper()
	host := startMemcached(64)
	addServerPod(ctx, s, 1, host, "rev-64")
	setServerRevisions(ctx, s, "rev-64", "rev-64", 2)
	return host
}

// autopilotSeries are the autopilot metrics of the Memcached key: by name, and by name/step or
// name/reason for the counters.
func autopilotSeries(key types.NamespacedName) map[string]float64 {
	GinkgoHelper()
	families, err := crmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	out := map[string]float64{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "memcached_operator_autopilot_") {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "memcached_namespace") != key.Namespace || label(m, "memcached") != key.Name {
				continue
			}
			name := f.GetName()
			if s := label(m, "step") + label(m, "reason"); s != "" {
				name += "/" + s
			}
			out[name] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return out
}

var _ = ptr.To[int32]
