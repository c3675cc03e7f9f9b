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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The cluster's capabilities (the API versions charts test) are read once per
// capabilitiesTTL (actionclient.DefaultCapabilitiesTTL in production), not for every render, yet an API installed in the cluster reaches
// the chart: a Memcached asking for a ServiceMonitor fails until the Prometheus Operator's API
// exists, then installs without anyone touching it.
var _ = Describe("Cluster capabilities", Serial, func() {
	It("are read once per TTL, and a newly installed API reaches the chart", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		key := types.NamespacedName{Namespace: ns, Name: "memcached-monitored"}

		By("counting the discovery requests of periodic reconciles")
		for _, name := range []string{"memcached-a", "memcached-b", "memcached-c"} {
			other := types.NamespacedName{Namespace: ns, Name: name}
			createMemcached(ctx, other, "  replicaCount: 1")
			Eventually(deployedCondition(ctx, other), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		}
		mark, start := writes.mark(), time.Now()
		before := reconciles("memcached-controller")
		Eventually(func() float64 { return reconciles("memcached-controller") }, timeout, interval).
			Should(BeNumerically(">=", before+10), "expected periodic reconciles")
		reads := 0
		for _, r := range writes.requestsSince(mark) {
			if r == "GET /version" {
				reads++
			}
		}
		Expect(reads).To(BeNumerically("<=", int(time.Since(start)/capabilitiesTTL)+1),
			"%d reads of the server version for %v reconciles in %s", reads, reconciles("memcached-controller")-before, time.Since(start))

		By("asking for a ServiceMonitor before the cluster serves the API")
		createMemcached(ctx, key, "  replicaCount: 1\n  metrics: {enabled: true, serviceMonitor: {enabled: true}}")
		Eventually(memcachedCondition(ctx, key, "ReleaseFailed"), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Message", ContainSubstring("needs the Prometheus Operator"))))

		By("installing the ServiceMonitor API, which the next render sees")
		crd := serviceMonitorCRD()
		Expect(k8sClient.Create(ctx, crd)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			deleteMemcached(ctx, key)
			Expect(k8sClient.Delete(ctx, crd)).To(Succeed())
		})
		Eventually(deployedCondition(ctx, key), 2*timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		sm := &unstructured.Unstructured{}
		sm.SetAPIVersion("monitoring.coreos.com/v1")
		sm.SetKind("ServiceMonitor")
		Expect(k8sClient.Get(ctx, key, sm)).To(Succeed())
	})
})

// serviceMonitorCRD is enough of the Prometheus Operator's ServiceMonitor API for the chart.
func serviceMonitorCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "servicemonitors.monitoring.coreos.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "monitoring.coreos.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "servicemonitors", Singular: "servicemonitor", Kind: "ServiceMonitor", ListKind: "ServiceMonitorList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}
