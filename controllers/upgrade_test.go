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
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/upgradeable"
	"github.com/example/memcached-operator/internal/labels"
)

func hasCondition(typ string, status metav1.ConditionStatus, reason string) OmegaMatcher {
	return ContainElement(And(HaveField("Type", typ), HaveField("Status", status), HaveField("Reason", reason)))
}

var _ = Describe("Upgrades of memcached (Go side of the Helm API)", func() {
	var (
		ctx context.Context
		ns  string
		key types.NamespacedName
	)

	BeforeEach(func() {
		ctx = context.Background()
		ns = newNamespace(ctx)
		key = types.NamespacedName{Namespace: ns, Name: "memcached-sample"}
		// A CR left failing would keep being retried (and recording Events) during later specs.
		DeferCleanup(func() { deleteMemcached(context.Background(), key) })
	})

	It("takes over a release of the 0.1.0 chart: replaces its Deployment by the StatefulSet of servers and moves the renamed value", func() {
		old := chartOfRelease("0.1.0")
		Expect(old.Metadata.Version).To(Equal("0.1.0"))
		installRelease(ctx, ns, key.Name, old, map[string]any{"replicaCount": 2, "memcached": map[string]any{"memoryLimitMB": 96}})
		before := &appsv1.Deployment{}
		Expect(k8sClient.Get(ctx, key, before)).To(Succeed())
		Expect(before.Spec.Selector.MatchLabels).NotTo(HaveKey("app.kubernetes.io/component"))

		By("having next to it a Deployment that looks like the release's but that the operator did not make (the helm CLI's)")
		podLabels := map[string]string{"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": key.Name, "app.kubernetes.io/part-of": "x"}
		lookalike := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name + "-cli", Namespace: ns, Labels: podLabels,
				Annotations: map[string]string{"meta.helm.sh/release-name": key.Name, "meta.helm.sh/release-namespace": ns}},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: podLabels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "memcached", Image: relatedImage}}}}},
		}
		Expect(k8sClient.Create(ctx, lookalike)).To(Succeed())

		By("creating the CR as 0.1.0 users wrote it")
		createMemcached(ctx, key, "  replicaCount: 2\n  memcached: {memoryLimitMB: 96}\n")
		ownRecords(ctx, key)

		By("acting as the garbage collector for the Deployment the operator deletes with its pods orphaned")
		Eventually(func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(k8sClient.Get(ctx, key, d)).To(Succeed())
			g.Expect(d.UID).To(Equal(before.UID))
			g.Expect(d.DeletionTimestamp).NotTo(BeNil(), "the old Deployment is being deleted")
			g.Expect(d.Finalizers).To(ContainElement(metav1.FinalizerOrphanDependents))
			d.Finalizers = nil
			g.Expect(k8sClient.Update(ctx, d)).To(Succeed())
		}, timeout, interval).Should(Succeed())

		By("finding the StatefulSet of servers, with the 0.2.0 selector and the same memory, and no Deployment")
		Eventually(func(g Gomega) {
			s := &appsv1.StatefulSet{}
			g.Expect(k8sClient.Get(ctx, key, s)).To(Succeed())
			g.Expect(s.Spec.Selector.MatchLabels).To(HaveKeyWithValue("app.kubernetes.io/component", "cache"))
			g.Expect(s.Spec.Template.Spec.Containers[0].Args).To(ContainElements("-m", "96"))
		}, timeout, interval).Should(Succeed())
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Reason", "UpgradeSuccessful"))
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, key, &appsv1.Deployment{}))).To(BeTrue())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(lookalike), lookalike)).To(Succeed())
		Expect(lookalike.DeletionTimestamp).To(BeNil(), "a Deployment the operator did not make is left alone")

		By("retiring a pod of the 0.1.0 release once the servers are available")
		// What the orphaned ReplicaSet's pods look like (envtest runs no ReplicaSet controller).
		oldPod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "memcached-sample-old", Namespace: ns, Labels: map[string]string{
				"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": key.Name, "app.kubernetes.io/component": "cache",
				"app.kubernetes.io/part-of": "memcached-operator",
			}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "memcached", Image: relatedImage}}},
		}
		Expect(k8sClient.Create(ctx, oldPod)).To(Succeed())
		Eventually(memcachedStatus(ctx, key), timeout, interval).Should(
			HaveField("Conditions", hasCondition("Progressing", metav1.ConditionTrue, "RollingOut")))
		Consistently(func(g Gomega) map[string]string {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(oldPod), oldPod)).To(Succeed())
			return oldPod.Labels
		}, time.Second, interval).Should(HaveKey("app.kubernetes.io/component"), "it serves until the new pods are available")
		mc := &cachev1.Memcached{}
		Expect(k8sClient.Get(ctx, key, mc)).To(Succeed())
		Eventually(func(g Gomega) []metav1.OwnerReference {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(oldPod), oldPod)).To(Succeed())
			return oldPod.OwnerReferences
		}, timeout, interval).Should(ContainElement(And(HaveField("UID", mc.UID), HaveField("Kind", "Memcached"), HaveField("Controller", BeNil()))),
			"a CR deleted before its old pods are retired takes them with it")
		setRollout(ctx, key, 2, 2, 2)
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(oldPod), oldPod)).To(Succeed())
			g.Expect(oldPod.Labels).NotTo(HaveKey("app.kubernetes.io/component"), "out of the Service")
			g.Expect(oldPod.Annotations).To(HaveKey("cache.my.domain/retired-at"))
		}, timeout, interval).Should(Succeed())
		reported := &recordedCondition{}
		r := &upgradeable.Reconciler{Client: client.NewNamespacedClient(k8sClient, ns), Condition: reported}
		Eventually(func(g Gomega) *metav1.Condition {
			g.Expect(r.Reconcile(ctx, ctrl.Request{})).Error().NotTo(HaveOccurred())
			return reported.c
		}, retireDelay, interval).Should(HaveValue(And(HaveField("Status", metav1.ConditionFalse),
			HaveField("Message", ContainSubstring("Memcached "+ns+"/memcached-sample")))), "retiring pods hold operator upgrades back")
		Eventually(func(g Gomega) {
			err := k8sClient.Get(ctx, client.ObjectKeyFromObject(oldPod), oldPod)
			g.Expect(apierrors.IsNotFound(err) || err == nil && oldPod.DeletionTimestamp != nil).To(BeTrue(), "deleted")
		}, timeout, interval).Should(Succeed())
		Eventually(memcachedStatus(ctx, key), timeout, interval).Should(And(HaveField("Version", "1.6.38"),
			HaveField("Conditions", hasCondition("Progressing", metav1.ConditionFalse, "Complete"))))

		By("finding the CR's spec moved to the new name")
		Eventually(func(g Gomega) *cachev1.MemcachedServer {
			mc := &cachev1.Memcached{}
			g.Expect(k8sClient.Get(ctx, key, mc)).To(Succeed())
			return mc.Spec.Memcached
		}, timeout, interval).Should(And(HaveField("MaxMemoryMB", BeEquivalentTo(96)), HaveField("MemoryLimitMB", BeZero())))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(
			ContainElements("ServersMigrated", "ChartUpgraded", "SpecMigrated", "PodRetiring"))
	})

	// cutOffUpgrade leaves the CR's release as an operator killed in the middle of an upgrade to a
	// new chart does: revision 2 pending, revision 1 deployed; and returns revision 2.
	cutOffUpgrade := func() *release.Release {
		installRelease(ctx, ns, key.Name, chartAsVersion("0.1.9"), map[string]any{"replicaCount": 1})
		createMemcached(ctx, key, "  replicaCount: 1\n")
		ownRecords(ctx, key)
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Reason", "UpgradeSuccessful"))

		By("leaving the upgrade as an operator killed in its middle does: revision 2 pending, revision 1 deployed")
		releases := releaseStore(ctx, key)
		cut, err := releases.Get(key.Name, 2)
		Expect(err).NotTo(HaveOccurred())
		Expect(cut.Chart.Metadata.Version).NotTo(Equal("0.1.9"))
		cut.Info.Status = release.StatusPendingUpgrade
		Expect(releases.Update(cut)).To(Succeed())
		first, err := releases.Get(key.Name, 1)
		Expect(err).NotTo(HaveOccurred())
		first.Info.Status = release.StatusDeployed
		Expect(releases.Update(first)).To(Succeed())
		return cut
	}
	poke := func(value string) {
		Expect(k8sClient.Patch(ctx, &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns}},
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"test.memcached/poke":"`+value+`"}}}`)))).To(Succeed())
	}

	It("finishes an upgrade to a new chart cut off by a killed operator at once, and reports the chart it moved from", func() {
		cut := cutOffUpgrade()
		releases := releaseStore(ctx, key)

		By("starting a reconcile, as the next operator does")
		poke("1")
		// Well within FailedRetryBase: the cut-off revision did not fail, so it has no back-off.
		Eventually(func(g Gomega) []string {
			var msgs []string
			events := &corev1.EventList{}
			g.Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			for _, e := range events.Items {
				if e.Reason == "ChartUpgraded" {
					msgs = append(msgs, e.Message)
				}
			}
			return msgs
		}, 10*time.Second, interval).Should(ContainElement(ContainSubstring("from chart 0.1.9 to %s (revision 3)", cut.Chart.Metadata.Version)))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement("ReleaseRecovered"))
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Reason", "UpgradeSuccessful"))
		recovered, err := releases.Get(key.Name, 2)
		Expect(err).NotTo(HaveOccurred())
		Expect(recovered.Info.Status).To(Equal(release.StatusFailed))
		Expect(recovered.Info.Description).To(ContainSubstring("interrupted"))
	})

	// A first install's record is written once, at its end (since 1.3.0); one cut off before
	// leaves no record. Versions before wrote a pending-install record first.
	DescribeTable("installs again a first install cut off by a killed operator, adopting what it made",
		func(cutOff func(releases *storage.Storage), recoveredEvent bool) {
			createMemcached(ctx, key, "  replicaCount: 1\n")
			Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
			made := &appsv1.StatefulSet{}
			Eventually(func() error {
				d, err := serversOfRelease(ctx, key)
				made = d
				return err
			}, timeout, interval).Should(Succeed())

			By("leaving revision 1 as an install cut off after it created its objects")
			releases := releaseStore(ctx, key)
			cutOff(releases)
			poke("1")
			if recoveredEvent {
				Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement("ReleaseRecovered"))
			}

			Eventually(func(g Gomega) release.Status {
				rel, err := releases.Last(key.Name)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(rel.Version).To(Equal(1), "installed again as revision 1")
				return rel.Info.Status
			}, timeout, interval).Should(Equal(release.StatusDeployed))
			Expect(releaseSecrets(ctx, ns, key.Name)).To(HaveLen(1))
			again, err := serversOfRelease(ctx, key)
			Expect(err).NotTo(HaveOccurred())
			Expect(again.UID).To(Equal(made.UID), "the cut-off install's StatefulSet is adopted, not made again")
			Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		},
		Entry("before it wrote its record", func(releases *storage.Storage) {
			_, err := releases.Delete(key.Name, 1)
			Expect(err).NotTo(HaveOccurred())
		}, false),
		Entry("after it wrote a pending-install record (versions before 1.3.0)", func(releases *storage.Storage) {
			first, err := releases.Get(key.Name, 1)
			Expect(err).NotTo(HaveOccurred())
			first.Info.Status = release.StatusPendingInstall
			Expect(releases.Update(first)).To(Succeed())
		}, true),
	)

	It("leaves a pending release alone while another process may still work on it (two leaders at once), and recovers it after", func() {
		recovery.close(errors.New("another pod's process may still be finishing the operation"))
		DeferCleanup(recovery.open)
		cutOffUpgrade()
		releases := releaseStore(ctx, key)
		poke("1")
		Eventually(memcachedCondition(ctx, key, "Irreconcilable"), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue),
			HaveField("Message", And(ContainSubstring("revision 2 is pending-upgrade, and is not recovered yet"), ContainSubstring("may still be finishing")))))
		Consistently(func(g Gomega) release.Status {
			rel, err := releases.Get(key.Name, 2)
			g.Expect(err).NotTo(HaveOccurred())
			return rel.Info.Status
		}, 3*time.Second, interval).Should(Equal(release.StatusPendingUpgrade), "the other process's revision is left as it is")
		Expect(releaseSecrets(ctx, ns, key.Name)).To(HaveLen(2), "no revision is added")

		recovery.open()
		poke("2")
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement("ReleaseRecovered"))
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Reason", "UpgradeSuccessful"))
		Eventually(memcachedCondition(ctx, key, "Irreconcilable"), timeout, interval).Should(HaveField("Status", metav1.ConditionFalse))
	})

	It("says at once, with an Event, that a pod cannot pull its image", func() {
		createMemcached(ctx, key, "  replicaCount: 1\n")
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		setRollout(ctx, key, 1, 1, 0)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name + "-x", Namespace: ns, Labels: map[string]string{
				labels.Name: labels.ChartName, labels.Instance: key.Name, labels.PartOf: labels.Operator}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "memcached", Image: "registry.example.com/missing/memcached:1.6.38"}}},
		}
		Expect(k8sClient.Create(ctx, pod)).To(Succeed())
		setWaiting(ctx, pod, "ImagePullBackOff")
		Eventually(memcachedStatus(ctx, key), timeout, interval).Should(HaveField("Conditions", ContainElement(And(
			HaveField("Type", "Progressing"), HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "PodsFailing"),
			HaveField("Message", ContainSubstring("pod "+pod.Name+", container memcached: ImagePullBackOff: the kubelet's words"))))))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement("PodsFailing"))

		By("clearing it once the image is pulled")
		setWaiting(ctx, pod, "")
		Eventually(memcachedStatus(ctx, key), timeout, interval).Should(HaveField("Conditions", hasCondition("Progressing", metav1.ConditionTrue, "RollingOut")))
	})

	It("does not uninstall a pending release under another process either: the finalizer holds the CR until it may", func() {
		recovery.close(errors.New("another pod's process may still be finishing the operation"))
		DeferCleanup(recovery.open)
		cutOffUpgrade()
		releases := releaseStore(ctx, key)
		Expect(k8sClient.Delete(ctx, &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns}})).To(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, &cachev1.Memcached{})).To(Succeed(), "the CR waits on its finalizer")
			rel, err := releases.Get(key.Name, 2)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rel.Info.Status).To(Equal(release.StatusPendingUpgrade))
		}, 3*time.Second, interval).Should(Succeed())

		recovery.open()
		Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, key, &cachev1.Memcached{})) }, timeout, interval).Should(BeTrue())
		Expect(releaseSecrets(ctx, ns, key.Name)).To(BeEmpty())
	})

	It("reports the version the pods run and the progress of a rollout, next to the Helm conditions", func() {
		createMemcached(ctx, key, "  replicaCount: 2\n")
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		setRollout(ctx, key, 2, 2, 2)
		Eventually(memcachedStatus(ctx, key), timeout, interval).Should(And(
			HaveField("Version", "1.6.38"), HaveField("ReadyReplicas", BeEquivalentTo(2)),
			HaveField("Conditions", hasCondition("Available", metav1.ConditionTrue, "PodsAvailable")),
			HaveField("Conditions", hasCondition("Progressing", metav1.ConditionFalse, "Complete")),
			HaveField("Conditions", hasCondition("Deployed", metav1.ConditionTrue, "InstallSuccessful"))))

		By("upgrading memcached through the CR")
		Expect(k8sClient.Patch(ctx, &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns}},
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"image":{"tag":"1.6.39"}}}`)))).To(Succeed())
		Eventually(func(g Gomega) string {
			s := &appsv1.StatefulSet{}
			g.Expect(k8sClient.Get(ctx, key, s)).To(Succeed())
			return s.Spec.Template.Spec.Containers[0].Image
		}, timeout, interval).Should(HaveSuffix(":1.6.39"))
		setRollout(ctx, key, 3, 1, 2)
		Eventually(memcachedStatus(ctx, key), timeout, interval).Should(And(
			HaveField("Version", "1.6.38"), HaveField("UpdatedReplicas", BeEquivalentTo(1)),
			HaveField("Conditions", hasCondition("Progressing", metav1.ConditionTrue, "RollingOut")),
			HaveField("Conditions", hasCondition("Available", metav1.ConditionTrue, "PodsAvailable")),
			HaveField("Conditions", hasCondition("Deployed", metav1.ConditionTrue, "UpgradeSuccessful"))),
			"while pods roll, status keeps the version being replaced and the Helm conditions stay")
		setRollout(ctx, key, 2, 2, 2)
		Eventually(memcachedStatus(ctx, key), timeout, interval).Should(And(
			HaveField("Version", "1.6.39"),
			HaveField("Conditions", hasCondition("Progressing", metav1.ConditionFalse, "Complete"))))
	})

	It("leaves a failed upgrade failed: no rollback, no retry of the same upgrade before its back-off, at once on a change", func() {
		skipBelowKubernetes(30, "ValidatingAdmissionPolicy v1, with which this spec makes an upgrade fail")
		rejectAnnotatedServers(ctx, ns)
		createMemcached(ctx, key, "  replicaCount: 1\n")
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))

		By("making an upgrade that admission rejects")
		Expect(k8sClient.Patch(ctx, &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns}},
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"podAnnotations":{"test.memcached/reject":"yes"}}}`)))).To(Succeed())
		Eventually(memcachedCondition(ctx, key, "ReleaseFailed"), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Message", ContainSubstring("rejected by the test's policy"))))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement("UpgradeFailed"))
		Consistently(func(g Gomega) []string { return releaseSecrets(ctx, ns, key.Name) }, 5*time.Second, interval).Should(
			ConsistOf("sh.helm.release.v1.memcached-sample.v1", "sh.helm.release.v1.memcached-sample.v2"),
			"one failed revision: no rollback revision, no retry of the same upgrade")
		Expect(memcachedCondition(ctx, key, "ReleaseFailed")(Default)).To(HaveField("Message", ContainSubstring("is retried at")))

		By("reverting the change, which is tried at once")
		Expect(k8sClient.Patch(ctx, &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns}},
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"podAnnotations":null}}`)))).To(Succeed())
		Eventually(memcachedCondition(ctx, key, "ReleaseFailed"), timeout, interval).Should(HaveField("Status", metav1.ConditionFalse))
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Reason", "UpgradeSuccessful"))
		Expect(releaseSecrets(ctx, ns, key.Name)).To(HaveLen(3))
	})

	It("leaves alone a release made by a newer chart than its own", func() {
		installRelease(ctx, ns, key.Name, chartAsVersion("99.0.0"), map[string]any{"replicaCount": 1})
		createMemcached(ctx, key, "  replicaCount: 2\n")
		ownRecords(ctx, key)
		Eventually(memcachedCondition(ctx, key, "ReleaseFailed"), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Message", ContainSubstring("newer than this operator's chart"))))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement("DowngradeRefused"))
		d := &appsv1.StatefulSet{}
		Expect(k8sClient.Get(ctx, key, d)).To(Succeed())
		Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(1)))
		Expect(releaseSecrets(ctx, ns, key.Name)).To(ConsistOf("sh.helm.release.v1.memcached-sample.v1"))
	})
})

// rejectAnnotatedServers makes admission refuse, in ns, StatefulSets whose pods carry the
// annotation test.memcached/reject: a failing upgrade, injected with a real admission policy.
func rejectAnnotatedServers(ctx context.Context, ns string) {
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "reject-" + ns},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"statefulsets"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: "!has(object.spec.template.metadata.annotations) || !('test.memcached/reject' in object.spec.template.metadata.annotations)",
				Message:    "rejected by the test's policy",
			}},
		},
	}
	Expect(k8sClient.Create(ctx, policy)).To(Succeed())
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "reject-" + ns},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns},
			}},
		},
	}
	Expect(k8sClient.Create(ctx, binding)).To(Succeed())
	DeferCleanup(func() {
		Expect(k8sClient.Delete(context.Background(), binding)).To(Succeed())
		Expect(k8sClient.Delete(context.Background(), policy)).To(Succeed())
	})
	// The API server loads policies asynchronously: wait until it refuses a dry run.
	Eventually(func() string {
		d := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
			Spec: appsv1.StatefulSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"test.memcached/reject": "yes"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "c:1"}}},
				},
			},
		}
		err := k8sClient.Create(ctx, d, client.DryRunAll)
		if err == nil {
			return ""
		}
		return err.Error()
	}, timeout, interval).Should(ContainSubstring("rejected by the test's policy"))
}
