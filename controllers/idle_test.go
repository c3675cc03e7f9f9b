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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// A periodic reconcile of an unchanged resource must write nothing: no status churn, no Helm
// upgrade, no patch the API server would treat as a no-op. The counter sees every request the
// manager sends, of both the Helm and the Go side.
var _ = Describe("Idle reconciles", Serial, func() {
	It("write nothing to the API server", func() {
		ctx := context.Background()
		ns := newNamespace(ctx)
		mcKey := types.NamespacedName{Namespace: ns, Name: "idle-memcached"}
		bKey := types.NamespacedName{Namespace: ns, Name: "idle-backup"}

		By("bringing a Memcached and a MemcachedBackup to their steady state")
		Expect(k8sClient.Create(ctx, &cachev1.Memcached{
			ObjectMeta: metav1.ObjectMeta{Name: mcKey.Name, Namespace: ns},
			Spec: cachev1.MemcachedSpec{
				ReplicaCount: ptr.To[int32](2),
				Metrics:      &cachev1.MetricsSpec{Enabled: ptr.To(true)},
				Resources:    nil,
			},
		})).To(Succeed())
		Expect(k8sClient.Create(ctx, &cachev1.MemcachedBackup{
			ObjectMeta: metav1.ObjectMeta{Name: bKey.Name, Namespace: ns},
			Spec:       cachev1.MemcachedBackupSpec{Size: 1},
		})).To(Succeed())
		Eventually(deployedCondition(ctx, mcKey), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		// The Go side's first report of the Memcached follows the Helm side's Deployed.
		Eventually(memcachedCondition(ctx, mcKey, cachev1.ConditionAvailable), timeout, interval).ShouldNot(HaveField("Type", ""))
		deploy := &appsv1.Deployment{}
		Eventually(func() error { return k8sClient.Get(ctx, bKey, deploy) }, timeout, interval).Should(Succeed())
		backupPod(ctx, ns, bKey.Name, "idle-backup-pod", true)
		deploy.Status = appsv1.DeploymentStatus{ObservedGeneration: deploy.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
		Expect(k8sClient.Status().Update(ctx, deploy)).To(Succeed())
		Eventually(backupStatus(ctx, bKey), timeout, interval).Should(And(
			HaveField("Nodes", ConsistOf("idle-backup-pod")),
			conditionStatus(cachev1.ConditionAvailable, metav1.ConditionTrue)))
		// Let the reconciles that the steady state itself caused finish.
		helmBefore, goBefore := reconciles("memcached-controller"), reconciles("memcachedbackup")
		Eventually(func() bool {
			return reconciles("memcached-controller") > helmBefore && reconciles("memcachedbackup") > goBefore
		}, timeout, interval).Should(BeTrue())

		By("counting the writes of the next periodic reconciles")
		mark := writes.mark()
		helmBefore, goBefore = reconciles("memcached-controller"), reconciles("memcachedbackup")
		Eventually(func() bool {
			return reconciles("memcached-controller") >= helmBefore+3 && reconciles("memcachedbackup") >= goBefore+3
		}, 4*timeout, 200*time.Millisecond).Should(BeTrue(), "expected at least 3 periodic reconciles of each controller")
		// Only this namespace's requests and cluster-wide ones: CRs that other specs left behind
		// (a failed release retried after its back-off, say) are not idle.
		Expect(ofNamespace(writes.since(mark), ns)).To(BeEmpty(), "idle reconciles must not write; the manager sent these requests")
		Expect(ofNamespace(writes.requestsSince(mark), ns)).NotTo(ContainElement(ContainSubstring("/openapi/")),
			"an idle reconcile renders nothing, so it fetches no OpenAPI document")
		Expect(ofNamespace(writes.requestsSince(mark), ns)).NotTo(ContainElement(MatchRegexp(`^GET /apis/cache.my.domain/v1/namespaces/[^/]+/memcacheds/`)),
			"the Memcached is read from the cache")
		Expect(ofNamespace(writes.requestsSince(mark), ns)).NotTo(ContainElement(MatchRegexp(`^GET /(api|apis/[^/]+)/v1/namespaces/[^/]+/(statefulsets|deployments|services|serviceaccounts|configmaps|poddisruptionbudgets|networkpolicies|pods)/`)),
			"the release's objects, and the servers, are read from the cache")
		Expect(ofNamespace(writes.requestsSince(mark), ns)).NotTo(ContainElement(MatchRegexp(`^GET /api/v1/namespaces/[^/]+/secrets`)),
			"the release records are read from the cache")
		Expect(releaseSecrets(ctx, ns, mcKey.Name)).To(ConsistOf("sh.helm.release.v1.idle-memcached.v1"),
			"an unchanged Memcached must not be upgraded")
	})
})

// ofNamespace keeps the requests ("METHOD path") for ns or for no namespace.
func ofNamespace(requests []string, ns string) []string {
	var out []string
	for _, r := range requests {
		if !strings.Contains(r, "/namespaces/") || strings.Contains(r, "/namespaces/"+ns+"/") {
			out = append(out, r)
		}
	}
	return out
}
