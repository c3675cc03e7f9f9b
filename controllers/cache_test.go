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
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

var _ = Describe("The manager's cache", func() {
	It("holds each Memcached once, unstructured, and answers the Go side's typed reads from it", func(ctx SpecContext) {
		By("refusing a typed informer, which would hold every CR a second time")
		_, err := mgrCache.GetInformer(ctx, &cachev1.Memcached{})
		Expect(err).To(MatchError(ContainSubstring("unstructured")))

		By("reading a Memcached typed as the API server serves it, quantities as written")
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "typed"}
		createMemcached(ctx, key, "  replicaCount: 2\n  resources: {limits: {memory: 0.5Gi}}")
		Eventually(func(g Gomega) {
			live, cached := &cachev1.Memcached{}, &cachev1.Memcached{}
			g.Expect(k8sClient.Get(ctx, key, live)).To(Succeed())
			g.Expect(mgrCache.Get(ctx, key, cached)).To(Succeed())
			g.Expect(cached.ResourceVersion).To(Equal(live.ResourceVersion))
			g.Expect(cached.Spec).To(Equal(live.Spec))
			g.Expect(cached.Status).To(Equal(live.Status))
			g.Expect(cached.Spec.Resources.Limits.Memory.String()).To(Equal("512Mi"))

			list := &cachev1.MemcachedList{}
			g.Expect(mgrCache.List(ctx, list, client.InNamespace(key.Namespace))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1))
			g.Expect(list.Items[0].Spec).To(Equal(live.Spec))
		}, timeout, interval).Should(Succeed())
		deleteMemcached(ctx, key)
	})
})
