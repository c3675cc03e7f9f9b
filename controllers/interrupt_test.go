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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers"
)

// A change of the servers interrupted mid-step (controllers/servers/rollout.go): the plan is in status.rollout,
// each server known by its pod's UID, so an interruption is folded in and the change finishes.
// Each spec is a cell of change × state × event → what comes next: a warm restart (a new image,
// keepCacheAcross Restarts) whose first server restarts when the event comes. The specs play the
// StatefulSet controller and the kubelet, with real memcacheds for the servers; the real cluster's
// matrix is tests/e2e/interrupt_test.go.
var _ = Describe("Changes of the servers, interrupted", func() {
	ctx := context.Background()

	// restarting makes key a Memcached of two warm servers, each with 1000 keys, whose change to
	// memcached 1.6.39 has begun: the rollout held, server 1's memcached about to restart in its
	// pod with the new image.
	restarting := func(key types.NamespacedName) ([]*warmMemcached, *appsv1.StatefulSet) {
		GinkgoHelper()
		warm := []*warmMemcached{startWarmMemcached(64), startWarmMemcached(64)}
		createMemcached(ctx, key, "  replicaCount: 2\n  minReadySeconds: 0\n  keepCacheAcross: Restarts\n  image: {tag: 1.6.38}\n")
		servers := playServers(ctx, key, []string{warm[0].host, warm[1].host}, "rev-a")
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionAvailable), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		for _, w := range warm {
			storeKeys(w.host, "k", 1000)
		}
		updateSpec(ctx, key, "  replicaCount: 2\n  minReadySeconds: 0\n  keepCacheAcross: Restarts\n  image: {tag: 1.6.39}\n")
		Eventually(func(g Gomega) {
			g.Expect(getStatefulSet(g, ctx, servers).Spec.Template.Spec.Containers[0].Image).To(HaveSuffix(":1.6.39"), "Helm applied the change")
			g.Expect(heldServers(ctx, servers)(g)).To(BeEquivalentTo(2))
		}, timeout, interval).Should(Succeed())
		setServerRevisions(ctx, servers, "rev-a", "rev-b", 0)
		awaitImage(ctx, servers, 1, ":1.6.39")
		Eventually(func(g Gomega) *cachev1.ServerRestart {
			mc := memcachedObject(g, ctx, key)
			g.Expect(mc.Status.Rollout.Servers).To(HaveLen(2))
			return mc.Status.Rollout.Servers[1].Restart
		}, timeout, interval).ShouldNot(BeNil(), "the restart is recorded before it is made")
		return warm, servers
	}
	// finished waits for the change to be done in place, every server on the new template.
	finished := func(key types.NamespacedName, servers *appsv1.StatefulSet, update string) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			g.Expect(changeOf(g, ctx, servers)).To(HaveField("Phase", cachev1.RolloutComplete))
			g.Expect(heldServers(ctx, servers)(g)).To(BeZero(), "the hold is let go")
			for i := range 2 {
				p := serverPod(g, ctx, servers, i)
				g.Expect(p.Spec.Containers[0].Image).To(HaveSuffix(":1.6.39"))
				g.Expect(p.Labels).To(And(HaveKeyWithValue(appsv1.StatefulSetRevisionLabel, update), HaveKeyWithValue("cache.my.domain/serving", "true")))
			}
		}, timeout, interval).Should(Succeed())
		setServerRevisions(ctx, servers, update, update, 2)
	}

	It("goes on warm when a server's pod is replaced mid-restart: that server started empty, said so with its reason, and gets the new image too", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "replaced"}
		warm, servers := restarting(key)

		By("server 1's pod is evicted mid-restart; the StatefulSet controller makes a new one from the revision it holds")
		old := serverPod(Default, ctx, servers, 1)
		Expect(k8sClient.Delete(ctx, old, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(old), &corev1.Pod{}))
		}, timeout, interval).Should(BeTrue())
		warm[1].replace(64)
		addServerPod(ctx, servers, 1, warm[1].host, "rev-a")
		Eventually(func(g Gomega) {
			p := serverPod(g, ctx, servers, 1)
			p.Spec.Containers[0].Image = strings.Replace(p.Spec.Containers[0].Image, ":1.6.39", ":1.6.38", 1)
			g.Expect(k8sClient.Update(ctx, p)).To(Succeed())
		}, timeout, interval).Should(Succeed())

		By("the operator names it, and takes the new pod to the new image")
		Eventually(func(g Gomega) *cachev1.ServerEmptyStart {
			return memcachedObject(g, ctx, key).Status.Rollout.Servers[1].StartedEmpty
		}, timeout, interval).Should(And(Not(BeNil()), HaveField("Reason", cachev1.EmptyPodReplaced)))
		awaitImage(ctx, servers, 1, ":1.6.39")
		Expect(serverPod(Default, ctx, servers, 1).UID).NotTo(Equal(old.UID))
		Consistently(serverImage(ctx, servers, 0), time.Second, interval).Should(HaveSuffix(":1.6.38"), "one server at a time")
		kubeletRestarts(ctx, servers, 1, warm[1], 64)

		By("then server 0 restarts warm, and the change is done in place")
		awaitImage(ctx, servers, 0, ":1.6.39")
		kubeletRestarts(ctx, servers, 0, warm[0], 64)
		finished(key, servers, "rev-b")
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCacheWarm), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", cachev1.WayStartedEmpty),
			HaveField("Message", And(ContainSubstring("1 with their items"), ContainSubstring("server replaced-memcached-1 started empty: its pod was replaced")))))
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionProgressing), timeout, interval).Should(HaveField("Reason", "Complete"))
		Expect(countKeys(warm[0].host, "k", 1000)).To(Equal(1000), "server 0 kept its keys")
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElements(cachev1.WayStartedEmpty, cachev1.WayWarmRestart))
	})

	It("goes on when the operator restarts mid-restart: the new operator checks the restart it did not see made, and finishes", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "restarted"}
		warm, servers := restarting(key)

		restartOperator()
		kubeletRestarts(ctx, servers, 1, warm[1], 64)
		awaitImage(ctx, servers, 0, ":1.6.39")
		kubeletRestarts(ctx, servers, 0, warm[0], 64)
		finished(key, servers, "rev-b")
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCacheWarm), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", cachev1.WayWarmRestart),
			HaveField("Message", ContainSubstring("every server restarted in its pod with its items"))))
		for _, w := range warm {
			Expect(countKeys(w.host, "k", 1000)).To(Equal(1000), "every key restored")
		}
	})

	It("folds a second change in mid-restart (a label): no server rolled out, each gets both", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "second"}
		warm, servers := restarting(key)

		updateSpec(ctx, key, "  replicaCount: 2\n  minReadySeconds: 0\n  keepCacheAcross: Restarts\n  image: {tag: 1.6.39}\n  podLabels: {tier: cache}\n")
		Eventually(func(g Gomega) {
			g.Expect(getStatefulSet(g, ctx, servers).Spec.Template.Labels).To(HaveKeyWithValue("tier", "cache"), "Helm applied the second change")
			g.Expect(heldServers(ctx, servers)(g)).To(BeEquivalentTo(2), "still held")
		}, timeout, interval).Should(Succeed())
		setServerRevisions(ctx, servers, "rev-a", "rev-c", 0)
		kubeletRestarts(ctx, servers, 1, warm[1], 64)
		awaitImage(ctx, servers, 0, ":1.6.39")
		kubeletRestarts(ctx, servers, 0, warm[0], 64)
		finished(key, servers, "rev-c")
		for i := range 2 {
			Expect(serverPod(Default, ctx, servers, i).Labels).To(HaveKeyWithValue("tier", "cache"))
		}
		Expect(changeOf(Default, ctx, servers).What).To(And(ContainSubstring("pod labels or annotations"), ContainSubstring("memcached 1.6.38 → 1.6.39")))
		for _, w := range warm {
			Expect(countKeys(w.host, "k", 1000)).To(Equal(1000), "every key restored")
		}
	})

	It("makes its writes of the hold on the StatefulSet as read: a second writer's change, or a new hold, in between is a conflict to read again", func() {
		ns := newNamespace(ctx)
		s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "servers"}, Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}}}
		Expect(k8sClient.Create(ctx, s)).To(Succeed())
		read := s.DeepCopy()

		By("the StatefulSet controller's status writes pass")
		s.Status = appsv1.StatefulSetStatus{ObservedGeneration: s.Generation, Replicas: 2}
		Expect(k8sClient.Status().Update(ctx, s)).To(Succeed())
		Expect(controllers.SetPartition(ctx, k8sClient, read, 2)).To(Succeed())
		Expect(heldServers(ctx, s)(Default)).To(BeEquivalentTo(2))

		By("a second writer's change of the spec does not")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(s), read)).To(Succeed())
		Expect(k8sClient.Patch(ctx, s, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"minReadySeconds":3}}`)))).To(Succeed())
		err := controllers.SetPartition(ctx, k8sClient, read, 0)
		Expect(apierrors.IsConflict(err)).To(BeTrue(), "a conflict, not %v", err)
		Expect(heldServers(ctx, s)(Default)).To(BeEquivalentTo(2), "still held")
		Expect(controllers.AfterStatusWrite(err)).To(HaveField("RequeueAfter", BeNumerically(">", 0)), "read again soon, not with an error's back-off")

		By("a hold made anew for a second change in between, with the same partition (the generation stays), is not let go either")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(s), read)).To(Succeed())
		again := read.DeepCopy()
		Expect(controllers.SetPartition(ctx, k8sClient, again, 2)).To(Succeed())
		Expect(again.Generation).To(Equal(read.Generation), "the same partition: the spec did not change")
		err = controllers.SetPartition(ctx, k8sClient, read, 0)
		Expect(apierrors.IsConflict(err)).To(BeTrue(), "a conflict, not %v", err)
		Expect(heldServers(ctx, s)(Default)).To(BeEquivalentTo(2), "still held")

		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(s), read)).To(Succeed())
		Expect(controllers.SetPartition(ctx, k8sClient, read, 0)).To(Succeed())
		Expect(heldServers(ctx, s)(Default)).To(BeZero())
		Expect(read.Annotations).NotTo(HaveKey("cache.my.domain/hold"), "the hold's token goes with it")
	})
	It("makes a second change in place right after the first, while the StatefulSet's status still counts the old revision", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "again"}
		hosts := []string{startMemcached(64), startMemcached(64)}
		createMemcached(ctx, key, "  replicaCount: 2\n  minReadySeconds: 0\n")
		servers := playServers(ctx, key, hosts, "rev-a")
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionAvailable), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		updateSpec(ctx, key, "  replicaCount: 2\n  minReadySeconds: 0\n  podAnnotations: {team: web}\n")
		Eventually(func(g Gomega) {
			g.Expect(changeOf(g, ctx, servers)).To(And(HaveField("Way", cachev1.WayInPlace), HaveField("Phase", cachev1.RolloutChanging)))
			g.Expect(heldServers(ctx, servers)(g)).To(BeEquivalentTo(2))
			g.Expect(getStatefulSet(g, ctx, servers).Spec.Template.Annotations).To(HaveKeyWithValue("team", "web"))
		}, timeout, interval).Should(Succeed())
		setServerRevisions(ctx, servers, "rev-a", "rev-b", 0)
		Eventually(func(g Gomega) {
			g.Expect(changeOf(g, ctx, servers)).To(HaveField("Phase", cachev1.RolloutComplete))
			for i := range hosts {
				g.Expect(serverPod(g, ctx, servers, i).Labels).To(HaveKeyWithValue(appsv1.StatefulSetRevisionLabel, "rev-b"))
			}
		}, timeout, interval).Should(Succeed())

		By("the StatefulSet controller not yet counting the pods the change relabeled, a second change comes")
		first := changeOf(Default, ctx, servers)
		setServerRevisions(ctx, servers, "rev-a", "rev-b", 1)
		updateSpec(ctx, key, "  replicaCount: 2\n  minReadySeconds: 0\n  podAnnotations: {team: web}\n  podLabels: {tier: cache}\n")
		Eventually(func(g Gomega) {
			g.Expect(changeOf(g, ctx, servers)).To(And(HaveField("FromRelease", BeNumerically(">", first.FromRelease)), HaveField("Way", cachev1.WayInPlace)),
				"the pods run the StatefulSet's revision: the change is made in place, not rolled out")
		}, timeout, interval).Should(Succeed())
	})
})

// memcachedObject is the Memcached key as it is live.
func memcachedObject(g Gomega, ctx context.Context, key types.NamespacedName) *cachev1.Memcached {
	mc := &cachev1.Memcached{}
	g.Expect(k8sClient.Get(ctx, key, mc)).To(Succeed())
	g.Expect(mc.Status.Rollout).NotTo(BeNil(), "status.rollout")
	return mc
}
