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

var _ = Describe("MemcachedBackup (Go API)", func() {
	var (
		ctx context.Context
		ns  string
		key types.NamespacedName
	)

	BeforeEach(func() {
		ctx = context.Background()
		ns = newNamespace(ctx)
		key = types.NamespacedName{Namespace: ns, Name: "memcachedbackup-sample"}
	})

	It("is Degraded, with an Event, while a pod cannot pull its image", func() {
		Expect(k8sClient.Create(ctx, &cachev1.MemcachedBackup{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns},
			Spec: cachev1.MemcachedBackupSpec{Size: 1}})).To(Succeed())
		Eventually(func() error { return k8sClient.Get(ctx, key, &appsv1.Deployment{}) }, timeout, interval).Should(Succeed())
		pod := backupPod(ctx, ns, key.Name, key.Name+"-x", false)
		setWaiting(ctx, pod, "ErrImagePull")
		Eventually(backupStatus(ctx, key), timeout, interval).Should(HaveField("Conditions", ContainElement(And(
			HaveField("Type", cachev1.ConditionDegraded), HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "PodsFailing"),
			HaveField("Message", ContainSubstring("container memcached: ErrImagePull"))))))
		Eventually(eventReasons(ctx, "MemcachedBackup", key), timeout, interval).Should(ContainElement("PodsFailing"))

		setWaiting(ctx, pod, "")
		Eventually(backupStatus(ctx, key), timeout, interval).Should(conditionStatus(cachev1.ConditionDegraded, metav1.ConditionFalse))
	})

	It("owns a Deployment of spec.size pods and reports them in status", func() {
		backup := &cachev1.MemcachedBackup{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns},
			Spec:       cachev1.MemcachedBackupSpec{Size: 2},
		}
		Expect(k8sClient.Create(ctx, backup)).To(Succeed())

		By("creating the Deployment with size replicas, the operand image and a restricted pod")
		deploy := &appsv1.Deployment{}
		Eventually(func() error { return k8sClient.Get(ctx, key, deploy) }, timeout, interval).Should(Succeed())
		Expect(deploy.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
		Expect(deploy.OwnerReferences).To(ConsistOf(And(
			HaveField("Name", key.Name), HaveField("Kind", "MemcachedBackup"),
			HaveField("Controller", HaveValue(BeTrue())), HaveField("BlockOwnerDeletion", HaveValue(BeTrue())))),
			"the garbage collector deletes the Deployment with its MemcachedBackup")
		c := deploy.Spec.Template.Spec.Containers[0]
		Expect(c.Image).To(Equal(relatedImage))
		Expect(c.Env).To(BeEmpty(), "the operator's proxy does not reach memcached, which makes no outbound calls")
		Expect(c.SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
		Expect(deploy.Spec.Template.Spec.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))

		By("reporting Progressing until the pods are available")
		Eventually(backupStatus(ctx, key), timeout, interval).Should(And(
			conditionStatus(cachev1.ConditionProgressing, metav1.ConditionTrue),
			conditionStatus(cachev1.ConditionAvailable, metav1.ConditionFalse),
			HaveField("ObservedGeneration", backup.Generation)))

		By("listing the pods in status.nodes and turning Available once the Deployment is")
		backupPod(ctx, ns, key.Name, "memcachedbackup-sample-b", true)
		backupPod(ctx, ns, key.Name, "memcachedbackup-sample-a", true)
		backupPod(ctx, ns, "another-backup", "another-backup-x", true)
		Expect(k8sClient.Get(ctx, key, deploy)).To(Succeed())
		deploy.Status = appsv1.DeploymentStatus{ObservedGeneration: deploy.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
		Expect(k8sClient.Status().Update(ctx, deploy)).To(Succeed())
		Eventually(backupStatus(ctx, key), timeout, interval).Should(And(
			HaveField("Nodes", Equal([]string{"memcachedbackup-sample-a", "memcachedbackup-sample-b"})),
			HaveField("ReadyReplicas", BeEquivalentTo(2)),
			conditionStatus(cachev1.ConditionAvailable, metav1.ConditionTrue),
			conditionStatus(cachev1.ConditionProgressing, metav1.ConditionFalse),
			conditionStatus(cachev1.ConditionDegraded, metav1.ConditionFalse)))

		By("following a change of spec.size")
		// A merge patch: the operator writes the status meanwhile, an update could conflict.
		Expect(k8sClient.Patch(ctx, backup, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"size":4}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, deploy)).To(Succeed())
			g.Expect(deploy.Spec.Replicas).To(HaveValue(BeEquivalentTo(4)))
		}, timeout, interval).Should(Succeed())
		Eventually(backupStatus(ctx, key), timeout, interval).Should(And(
			HaveField("ObservedGeneration", backup.Generation),
			conditionStatus(cachev1.ConditionProgressing, metav1.ConditionTrue)))

		By("reporting a Deployment that cannot create pods as Degraded")
		Expect(k8sClient.Get(ctx, key, deploy)).To(Succeed())
		deploy.Status.ObservedGeneration = deploy.Generation
		deploy.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue,
			Reason: "FailedCreate", Message: "pods \"x\" is forbidden: exceeded quota"}}
		Expect(k8sClient.Status().Update(ctx, deploy)).To(Succeed())
		Eventually(backupStatus(ctx, key), timeout, interval).Should(
			conditionStatus(cachev1.ConditionDegraded, metav1.ConditionTrue))

		By("recording Events on the MemcachedBackup")
		Eventually(eventReasons(ctx, "MemcachedBackup", key), timeout, interval).Should(ContainElements("Created", "Updated"))
	})

	It("repairs drift: a deleted Deployment comes back, a hand-scaled one is scaled back", func() {
		backup := &cachev1.MemcachedBackup{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns},
			Spec:       cachev1.MemcachedBackupSpec{Size: 2},
		}
		Expect(k8sClient.Create(ctx, backup)).To(Succeed())
		deploy := &appsv1.Deployment{}
		Eventually(func() error { return k8sClient.Get(ctx, key, deploy) }, timeout, interval).Should(Succeed())

		Expect(k8sClient.Delete(ctx, deploy)).To(Succeed())
		Eventually(func(g Gomega) {
			fresh := &appsv1.Deployment{}
			g.Expect(k8sClient.Get(ctx, key, fresh)).To(Succeed())
			g.Expect(fresh.UID).NotTo(Equal(deploy.UID))
			g.Expect(fresh.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
		}, timeout, interval).Should(Succeed())

		Expect(k8sClient.Get(ctx, key, deploy)).To(Succeed())
		deploy.Spec.Replicas = ptr.To[int32](9)
		deploy.Spec.Template.Spec.Containers[0].Image = "memcached:hand-edited"
		Expect(k8sClient.Update(ctx, deploy)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, deploy)).To(Succeed())
			g.Expect(deploy.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
			g.Expect(deploy.Spec.Template.Spec.Containers[0].Image).To(Equal(relatedImage))
		}, timeout, interval).Should(Succeed())
	})
})
