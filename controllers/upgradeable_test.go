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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/operator-framework/operator-lib/conditions"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/upgradeable"
	"github.com/example/memcached-operator/internal/labels"
)

// recordedCondition stands in for operator-lib's OperatorCondition (tests/integration runs the
// real one, as OLM makes it): it keeps the condition the reconciler sets.
type recordedCondition struct{ c *metav1.Condition }

func (r *recordedCondition) Get(context.Context) (*metav1.Condition, error) {
	if r.c == nil {
		return nil, conditions.ErrNoOperatorCondition
	}
	return r.c, nil
}

func (r *recordedCondition) Set(_ context.Context, status metav1.ConditionStatus, opts ...conditions.Option) error {
	c := &metav1.Condition{Type: "Upgradeable", Status: status}
	for _, o := range opts {
		o(c)
	}
	r.c = c
	return nil
}

// Upgradeable holds operator upgrades back only for the operator's own work in flight, and only
// for a bounded time: one tenant's failure never blocks a fix for all.
var _ = Describe("OperatorCondition Upgradeable", func() {
	var (
		ctx   context.Context
		ns    string
		cond  *recordedCondition
		clock time.Time
		r     *upgradeable.Reconciler
	)
	BeforeEach(func() {
		ctx = context.Background()
		ns = newNamespace(ctx)
		cond = &recordedCondition{}
		clock = time.Now()
		// The namespace's objects only: other specs leave Deployments rolling forever (envtest
		// runs no Deployment controller).
		r = &upgradeable.Reconciler{Client: client.NewNamespacedClient(k8sClient, ns), Condition: cond,
			MaxHold: time.Minute, Now: func() time.Time { return clock }}
	})
	reconcile := func() (metav1.Condition, time.Duration) {
		res, err := r.Reconcile(ctx, ctrl.Request{})
		Expect(err).NotTo(HaveOccurred())
		Expect(cond.c).NotTo(BeNil())
		return *cond.c, res.RequeueAfter
	}
	backupDeployment := func(name string) *appsv1.Deployment {
		Expect(k8sClient.Create(ctx, &cachev1.MemcachedBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: cachev1.MemcachedBackupSpec{Size: 2}})).To(Succeed())
		d := &appsv1.Deployment{}
		Eventually(func() error { return k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, d) }, timeout, interval).Should(Succeed())
		return d
	}
	setRolloutStatus := func(d *appsv1.Deployment, st appsv1.DeploymentStatus) {
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
			st.ObservedGeneration = d.Generation
			d.Status = st
			g.Expect(k8sClient.Status().Update(ctx, d)).To(Succeed())
		}, timeout, interval).Should(Succeed())
	}

	It("is True when the operator has nothing in flight", func() {
		c, _ := reconcile()
		Expect(c).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", upgradeable.ReasonAsExpected)))
	})

	It("is False while a Deployment the operator made rolls out, and True once it is complete", func() {
		d := backupDeployment("rolling")
		c, recheck := reconcile()
		Expect(c).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", upgradeable.ReasonWorkInProgress),
			HaveField("Message", ContainSubstring("Deployment "+ns+"/rolling"))))
		Expect(recheck).To(Equal(time.Minute), "it looks again when the hold ends")

		setRolloutStatus(d, appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2})
		c, _ = reconcile()
		Expect(c).To(HaveField("Status", metav1.ConditionTrue))
	})

	It("holds upgrades back for at most MaxHold in a row, however long rollouts take and new ones come", func() {
		backupDeployment("slow")
		c, _ := reconcile()
		Expect(c).To(HaveField("Status", metav1.ConditionFalse))
		clock = clock.Add(50 * time.Second)
		backupDeployment("next") // more work keeps coming
		c, recheck := reconcile()
		Expect(c).To(HaveField("Status", metav1.ConditionFalse))
		Expect(recheck).To(Equal(10 * time.Second))
		clock = clock.Add(11 * time.Second)
		backupDeployment("and-next")
		c, _ = reconcile()
		Expect(c).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", upgradeable.ReasonAsExpected),
			HaveField("Message", ContainSubstring("no longer holds upgrades back"))))
	})

	It("does not hold upgrades back for a rollout that failed: the failure stays on the tenant's CR", func() {
		d := backupDeployment("failing")
		setRolloutStatus(d, appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, Conditions: []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
			Message: `ReplicaSet "failing-1" has timed out progressing.`}}})
		c, _ := reconcile()
		Expect(c).To(HaveField("Status", metav1.ConditionTrue))
		Eventually(backupStatus(ctx, types.NamespacedName{Namespace: ns, Name: "failing"}), timeout, interval).Should(
			conditionStatus(cachev1.ConditionDegraded, metav1.ConditionTrue), "the tenant sees the failure on the MemcachedBackup")
	})

	It("does not hold upgrades back for a Memcached whose release failed", func() {
		By("failing an install: a ServiceAccount of a user's holds the name of the Memcached's")
		Expect(k8sClient.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "failed-memcached", Namespace: ns}})).To(Succeed())
		key := types.NamespacedName{Namespace: ns, Name: "failed"}
		createMemcached(ctx, key, "  replicaCount: 1\n")
		Eventually(memcachedCondition(ctx, key, "ReleaseFailed"), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		c, _ := reconcile()
		Expect(c).To(HaveField("Status", metav1.ConditionTrue))
	})

	It("does not hold upgrades back for a StatefulSet whose servers fail: the failure stays on the tenant's CR", func() {
		key := types.NamespacedName{Namespace: ns, Name: "memcached-crashing"} // its StatefulSet has its name
		createMemcached(ctx, key, "  replicaCount: 1\n")
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		setRollout(ctx, key, 1, 1, 0)
		c, _ := reconcile()
		Expect(c).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Message", ContainSubstring("StatefulSet "+ns+"/memcached-crashing"))),
			"a rollout in flight holds upgrades back")

		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name + "-0", Namespace: ns, Labels: map[string]string{
				labels.Name: labels.ChartName, labels.Instance: key.Name, labels.PartOf: labels.Operator}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "memcached", Image: relatedImage}}},
		}
		Expect(k8sClient.Create(ctx, pod)).To(Succeed())
		setWaiting(ctx, pod, "CrashLoopBackOff")
		Eventually(memcachedStatus(ctx, key), timeout, interval).Should(HaveField("Conditions", hasCondition("Progressing", metav1.ConditionFalse, "PodsFailing")))
		c, _ = reconcile()
		Expect(c).To(HaveField("Status", metav1.ConditionTrue), "a rollout whose servers fail holds nothing back")
	})

	It("does not hold upgrades back for a Deployment that only carries the operator's labels", func() {
		labels := map[string]string{"app.kubernetes.io/part-of": "memcached-operator", "app": "theirs"}
		Expect(k8sClient.Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "lookalike", Namespace: ns, Labels: labels},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
				ProgressDeadlineSeconds: ptr.To[int32](2147483647),
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "c:1"}}}}},
		})).To(Succeed())
		c, _ := reconcile()
		Expect(c).To(HaveField("Status", metav1.ConditionTrue))
	})
})
