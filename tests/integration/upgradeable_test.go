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

package integration_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	apiv2 "github.com/operator-framework/api/pkg/operators/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// upgradeable reads the Upgradeable condition the operator set on its OperatorCondition.
func upgradeable(ctx context.Context, key types.NamespacedName) func(g Gomega) metav1.Condition {
	return func(g Gomega) metav1.Condition {
		oc := &apiv2.OperatorCondition{}
		g.Expect(k8sClient.Get(ctx, key, oc)).To(Succeed())
		c := meta.FindStatusCondition(oc.Spec.Conditions, apiv2.Upgradeable)
		g.Expect(c).NotTo(BeNil(), "no Upgradeable condition yet")
		return *c
	}
}

var _ = Describe("OperatorCondition Upgradeable", func() {
	It("is False while a rollout of the operator is in flight, True otherwise: an operand's failure does not hold upgrades back", func() {
		ctx := context.Background()
		opNS, workNS := newNamespace(ctx), newNamespace(ctx)
		operatorPod(ctx, opNS, "operator-olm")
		key := types.NamespacedName{Namespace: opNS, Name: "memcached-operator.v0.1.0"}
		Expect(k8sClient.Create(ctx, &apiv2.OperatorCondition{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: opNS}})).To(Succeed())

		By("starting the operator as OLM runs it (OPERATOR_CONDITION_NAME set) for a namespace with nothing to run")
		op := inPod(opNS, "operator-olm", "OPERATOR_CONDITION_NAME="+key.Name, "WATCH_NAMESPACE="+workNS)
		Eventually(op.Err, timeout).Should(gbytes.Say("became the leader"))
		Eventually(upgradeable(ctx, key), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "AsExpected")))

		By("creating a MemcachedBackup, whose Deployment has not rolled out yet")
		Expect(k8sClient.Create(ctx, &cachev1.MemcachedBackup{
			ObjectMeta: metav1.ObjectMeta{Name: "rolling", Namespace: workNS},
			Spec:       cachev1.MemcachedBackupSpec{Size: 2},
		})).To(Succeed())
		Eventually(upgradeable(ctx, key), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "OperatorWorkInProgress"),
			HaveField("Message", ContainSubstring("Deployment "+workNS+"/rolling"))))

		By("finishing the rollout")
		deploy := &appsv1.Deployment{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: workNS, Name: "rolling"}, deploy)).To(Succeed())
		deploy.Status = appsv1.DeploymentStatus{ObservedGeneration: deploy.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
		Expect(k8sClient.Status().Update(ctx, deploy)).To(Succeed())
		Eventually(upgradeable(ctx, key), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))

		By("failing the operand: its Deployment cannot create pods, which stays on the MemcachedBackup")
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: workNS, Name: "rolling"}, deploy)).To(Succeed())
		deploy.Status = appsv1.DeploymentStatus{ObservedGeneration: deploy.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue,
				Reason: "FailedCreate", Message: "exceeded quota"}}}
		Expect(k8sClient.Status().Update(ctx, deploy)).To(Succeed())
		Eventually(func(g Gomega) string {
			b := &cachev1.MemcachedBackup{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: workNS, Name: "rolling"}, b)).To(Succeed())
			c := meta.FindStatusCondition(b.Status.Conditions, cachev1.ConditionDegraded)
			g.Expect(c).NotTo(BeNil())
			return c.Message
		}, timeout, interval).Should(ContainSubstring("exceeded quota"))
		Consistently(upgradeable(ctx, key), 3*time.Second, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "AsExpected")))
	})
})
