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
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// A cluster whose API server does not serve pods/resize: a second API server, which on Kubernetes
// 1.35 emulates 1.32 (in-place resize was alpha then, its feature gate off), and on the floor run
// is the oldest supported Kubernetes itself. The operator finds that from discovery, and a memory
// change is rolled out as any other change is, which status and an Event say.
var _ = Describe("On a cluster that cannot resize pods in place", Ordered, func() {
	ctx := context.Background()

	BeforeAll(func() {
		env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
		if servesResize(cfg) {
			env.ControlPlane.GetAPIServer().Configure().Set("emulated-version", "1.32")
		}
		// envtest waits 5 s, not configurable, for a new API server's default namespace: on a
		// loaded machine (the floor run beside the e2e suite) that can pass; start again.
		var c *rest.Config
		err := retry.OnError(retry.DefaultBackoff, func(err error) bool {
			return strings.Contains(err.Error(), "default namespace didn't register")
		}, func() (err error) {
			if c, err = env.Start(); err != nil {
				_ = env.Stop()
			}
			return err
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(env.Stop)
		kc, err := client.New(c, client.Options{Scheme: scheme, FieldValidation: "Strict"})
		Expect(err).NotTo(HaveOccurred())
		Expect(servesResize(c)).To(BeFalse(), "this API server serves no pods/resize")
		Expect(kc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}})).To(Succeed())
		// Setup registers the releases metric for its own manager, as a process has one: once this
		// operator is stopped, the suite's is set up again to count from its cache.
		DeferCleanup(restartOperator)
		p := startOperatorProcess(c, grantOperatorRole(ctx, kc), nil)
		DeferCleanup(p.stop)
		DeferCleanup(useCluster(c, kc))
	})

	It("rolls a memory change out one server at a time, and says why", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "rolled"}
		host := startMemcached(64)
		createMemcached(ctx, key, "  replicaCount: 1\n  minReadySeconds: 0\n")
		servers := playServers(ctx, key, []string{host}, "rev-a")
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionAvailable), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))

		updateSpec(ctx, key, "  replicaCount: 1\n  minReadySeconds: 0\n  memcached:\n    maxMemoryMB: 128\n")
		Eventually(func(g Gomega) {
			s := getStatefulSet(g, ctx, servers)
			g.Expect(changeOf(g, ctx, servers)).To(And(HaveField("Phase", cachev1.RolloutRolledOut), HaveField("Message", ContainSubstring("does not serve pods/resize"))))
			g.Expect(heldServers(ctx, servers)(g)).To(BeZero(), "nothing held: the StatefulSet replaces the server")
			g.Expect(s.Spec.Template.Spec.Containers[0].Args).To(ContainElements("-m", "128"))
		}, timeout, interval).Should(Succeed())
		setServerRevisions(ctx, servers, "rev-a", "rev-b", 0)
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionResizing), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", cachev1.ReasonRollingOut),
			HaveField("Message", ContainSubstring("this cluster does not resize pods in place"))))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement("ResizeByRollout"))
		setServerRevisions(ctx, servers, "rev-b", "rev-b", 1)
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionResizing), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", cachev1.ReasonRolledOut)))
		Expect(podMemoryLimit(ctx, servers, 0)(Default)).To(Equal("96Mi"), "no resize was asked of the pod")
		Expect(memoryLimitMB(host)).To(Equal(64), "the operator left memcached to the rollout")
	})
})

// useCluster makes the suite's helpers talk to the API server of c with kc, and returns what puts
// the suite's own back.
func useCluster(c *rest.Config, kc client.Client) func() {
	was, wasClient := cfg, k8sClient
	cfg, k8sClient = c, kc
	return func() { cfg, k8sClient = was, wasClient }
}
