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
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/leader"
)

const (
	timeout  = 60 * time.Second
	interval = 200 * time.Millisecond
	lockName = "memcached-operator-lock"
)

// reconciled creates a MemcachedBackup and tells whether an operator made its Deployment.
func reconciled(ctx context.Context, ns, name string) func() error {
	Expect(k8sClient.Create(ctx, &cachev1.MemcachedBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       cachev1.MemcachedBackupSpec{Size: 1},
	})).To(Succeed())
	return func() error {
		return k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &appsv1.Deployment{})
	}
}

var _ = Describe("Leader for life", func() {
	It("lets one instance reconcile while the other waits, and hands over when the leader's pod is gone", func() {
		ctx := context.Background()
		opNS := newNamespace(ctx)
		workNS := newNamespace(ctx)
		podA := operatorPod(ctx, opNS, "operator-a")
		operatorPod(ctx, opNS, "operator-b")

		By("starting instance A, which takes the lock, owned by its pod")
		a := inPod(opNS, "operator-a")
		Eventually(a.Err, timeout).Should(gbytes.Say("became the leader"))
		lock := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: opNS, Name: lockName}, lock)).To(Succeed())
		Expect(lock.OwnerReferences).To(ConsistOf(And(HaveField("Kind", "Pod"), HaveField("Name", "operator-a"))))

		By("starting instance B, which waits while A holds the lock")
		b := inPod(opNS, "operator-b")
		Eventually(b.Err, timeout).Should(gbytes.Say("Not the leader. Waiting."))
		Eventually(reconciled(ctx, workNS, "while-a-leads"), timeout, interval).Should(Succeed(), "the leader reconciles")
		Consistently(b.Err, 3*time.Second).ShouldNot(gbytes.Say("became the leader|reconciling"))

		By("removing A's pod: A stops, its pod is deleted and the garbage collector drops the lock")
		a.Kill().Wait()
		Expect(k8sClient.Delete(ctx, podA)).To(Succeed())
		Expect(k8sClient.Delete(ctx, lock)).To(Succeed()) // envtest runs no garbage collector

		By("B takes over the lock and reconciles")
		Eventually(b.Err, timeout).Should(gbytes.Say("became the leader"))
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: opNS, Name: lockName}, lock)).To(Succeed())
			g.Expect(lock.OwnerReferences).To(ConsistOf(HaveField("Name", "operator-b")))
		}, timeout, interval).Should(Succeed())
		Eventually(reconciled(ctx, workNS, "after-handover"), timeout, interval).Should(Succeed(), "the new leader reconciles")
		Expect(b.ExitCode()).To(Equal(-1), "B is still running")
	})
})

var _ = Describe("Leader for life, when the lock goes while its holder runs", func() {
	It("stops the old leader within a check period, and the pod that takes the lock says it took it over", func() {
		ctx := context.Background()
		opNS := newNamespace(ctx)
		podA := operatorPod(ctx, opNS, "operator-a")
		operatorPod(ctx, opNS, "operator-b")
		a := inPod(opNS, "operator-a")
		Eventually(a.Err, timeout).Should(gbytes.Say("became the leader"))
		b := inPod(opNS, "operator-b")
		Eventually(b.Err, timeout).Should(gbytes.Say("Not the leader. Waiting."))

		By("force-deleting A's pod, as an impatient admin does: the lock goes while A runs on")
		Expect(k8sClient.Delete(ctx, podA, client.GracePeriodSeconds(0))).To(Succeed())
		// envtest runs no garbage collector to drop the lock with its owner.
		Expect(k8sClient.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: opNS, Name: lockName}})).To(Succeed())
		// Within 2 checks and its graceful shutdown; the deferral of the new leader counts on it.
		Eventually(a, 2*leader.CheckPeriod+leader.ShutdownTimeout).Should(gexec.Exit())
		Expect(a.ExitCode()).NotTo(BeZero())
		Expect(a.Err).To(gbytes.Say("stopping: another process may lead now"))

		Eventually(b.Err, timeout).Should(gbytes.Say("became the leader, taking the lock over"))
		Expect(b.ExitCode()).To(Equal(-1), "B is still running")
	})
})

var _ = Describe("Outside a cluster", func() {
	It("says that leader election is skipped and reconciles", func() {
		ctx := context.Background()
		ns := newNamespace(ctx)
		op := outOfCluster()
		Eventually(op.Err, timeout).Should(gbytes.Say("leader election skipped"))
		Eventually(op.Err, timeout).Should(gbytes.Say("not run by OLM: the OperatorCondition Upgradeable is not reported"))
		Eventually(reconciled(ctx, ns, "out-of-cluster"), timeout, interval).Should(Succeed())
	})
})

var _ = Describe("Without OLM v0's OperatorCondition", func() {
	It("runs in a pod as OLM v1 runs it (no OPERATOR_CONDITION_NAME, WATCH_NAMESPACE empty): says so once, leads and reconciles everywhere", func() {
		ctx := context.Background()
		opNS, workNS := newNamespace(ctx), newNamespace(ctx)
		operatorPod(ctx, opNS, "operator-olmv1")
		op := inPod(opNS, "operator-olmv1", "WATCH_NAMESPACE=")
		Eventually(op.Err, timeout).Should(gbytes.Say("became the leader"))
		Eventually(reconciled(ctx, workNS, "olmv1"), timeout, interval).Should(Succeed())
		Expect(strings.Count(string(op.Err.Contents()), "not run by OLM: the OperatorCondition Upgradeable is not reported")).To(Equal(1))
		Expect(op.ExitCode()).To(Equal(-1), "the operator is still running")
	})
})

var _ = Describe("WATCH_NAMESPACE", func() {
	It("limits the operator to the listed namespaces", func() {
		ctx := context.Background()
		watched1, watched2, other := newNamespace(ctx), newNamespace(ctx), newNamespace(ctx)
		op := outOfCluster("WATCH_NAMESPACE=" + watched1 + ", " + watched2)
		Eventually(op.Err, timeout).Should(gbytes.Say("reconciling"))

		Eventually(reconciled(ctx, watched1, "watched"), timeout, interval).Should(Succeed())
		Eventually(reconciled(ctx, watched2, "watched"), timeout, interval).Should(Succeed())
		notWatched := reconciled(ctx, other, "not-watched")
		Consistently(func() bool { return apierrors.IsNotFound(notWatched()) }, 5*time.Second, interval).Should(BeTrue(),
			"a MemcachedBackup outside WATCH_NAMESPACE must be left alone")
	})

	It("names a namespace that does not exist yet, idles, and reconciles its CRs as soon as it is created", func() {
		ctx := context.Background()
		later := fmt.Sprintf("it-later-%d", time.Now().UnixNano())
		op := outOfCluster("WATCH_NAMESPACE=" + later)
		Eventually(op.Err, timeout).Should(gbytes.Say(`a watched namespace does not exist yet.*"namespace":"` + later + `"`))
		Eventually(op.Err, timeout).Should(gbytes.Say("reconciling"))
		Consistently(op.Err, 3*time.Second).ShouldNot(gbytes.Say(`"level":"error"`), "no errors while the namespace is missing")

		Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: later}})).To(Succeed())
		Eventually(reconciled(ctx, later, "in-a-new-namespace"), timeout, interval).Should(Succeed())
	})
})
