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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var _ = Describe("The operator's metrics", func() {
	It("count releases by state and Helm operations by outcome", func(ctx SpecContext) {
		succeeded := map[string]string{"operation": "install", "outcome": "succeeded"}
		failed := map[string]string{"operation": "install", "outcome": "failed"}
		installs, failedInstalls := metricValue("memcached_operator_release_operations_total", succeeded),
			metricValue("memcached_operator_release_operations_total", failed)
		ns := newNamespace(ctx)

		By("counting an install that succeeds, and its release as deployed")
		ok := types.NamespacedName{Namespace: ns, Name: "counted"}
		createMemcached(ctx, ok, "  replicaCount: 1\n")
		DeferCleanup(func() { deleteMemcached(context.Background(), ok) })
		Eventually(deployedCondition(ctx, ok), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		Expect(metricValue("memcached_operator_release_operations_total", succeeded)).To(BeNumerically(">", installs))
		// The gauge counts from the manager's cache, which may see the condition a moment after us.
		Eventually(func() float64 {
			return metricValue("memcached_operator_releases", map[string]string{"state": "deployed"})
		}, timeout, interval).Should(BeNumerically(">=", 1))

		By("counting an install the chart refuses, and its release as failed, which says why")
		bad := types.NamespacedName{Namespace: ns, Name: "refused"}
		createMemcached(ctx, bad, "  metrics: {prometheusRule: {enabled: true}}\n")
		DeferCleanup(func() { deleteMemcached(context.Background(), bad) })
		Eventually(memcachedCondition(ctx, bad, "ReleaseFailed"), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue),
			HaveField("Message", ContainSubstring("metrics.prometheusRule.enabled needs metrics.enabled and metrics.serviceMonitor.enabled"))))
		Expect(metricValue("memcached_operator_release_operations_total", failed)).To(BeNumerically(">", failedInstalls))
		Eventually(func() float64 {
			return metricValue("memcached_operator_releases", map[string]string{"state": "failed"})
		}, timeout, interval).Should(BeNumerically(">=", 1))
	})
})

// metricValue is the value of the series of name with these labels in the operator's registry
// (0 if there is none).
func metricValue(name string, labels map[string]string) float64 {
	families, err := crmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for k, v := range labels {
				if label(m, k) != v {
					continue series
				}
			}
			return m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return 0
}
