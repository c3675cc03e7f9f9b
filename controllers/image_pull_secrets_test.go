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
	"k8s.io/apimachinery/pkg/types"
)

// A private mirror: both APIs' pods pull with the Secrets the CR names, and stop when the CR no
// longer names them.
var _ = Describe("Image pull secrets", func() {
	// The pods of a Memcached's StatefulSet, or of a MemcachedBackup's Deployment.
	podPullSecrets := func(ctx context.Context, key types.NamespacedName) func(g Gomega) []corev1.LocalObjectReference {
		return func(g Gomega) []corev1.LocalObjectReference {
			s := &appsv1.StatefulSet{}
			if err := k8sClient.Get(ctx, key, s); err == nil {
				return s.Spec.Template.Spec.ImagePullSecrets
			}
			d := &appsv1.Deployment{}
			g.Expect(k8sClient.Get(ctx, key, d)).To(Succeed())
			return d.Spec.Template.Spec.ImagePullSecrets
		}
	}
	mirror := []corev1.LocalObjectReference{{Name: "mirror"}, {Name: "mirror.backup"}}

	It("reach the memcached pods of a Memcached", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		key := types.NamespacedName{Namespace: ns, Name: "pulls-memcached"}
		createMemcached(ctx, key, "  imagePullSecrets: [{name: mirror}, {name: mirror.backup}]")
		Eventually(podPullSecrets(ctx, key), timeout, interval).Should(Equal(mirror))

		// The operator writes the CR too (finalizer, status): update what was just read.
		Eventually(func() error { return k8sClient.Update(ctx, withSpec(ctx, "Memcached", key, "  imagePullSecrets: []")) }, timeout, interval).Should(Succeed())
		Eventually(podPullSecrets(ctx, key), timeout, interval).Should(BeEmpty())
	})

	It("reach the pods of a MemcachedBackup", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		key := types.NamespacedName{Namespace: ns, Name: "pulls-backup"}
		Expect(k8sClient.Create(ctx, cr("MemcachedBackup", ns, key.Name, "  size: 1\n  imagePullSecrets: [{name: mirror}, {name: mirror.backup}]"))).To(Succeed())
		Eventually(podPullSecrets(ctx, key), timeout, interval).Should(Equal(mirror))

		Eventually(func() error { return k8sClient.Update(ctx, withSpec(ctx, "MemcachedBackup", key, "  size: 1")) }, timeout, interval).Should(Succeed())
		Eventually(podPullSecrets(ctx, key), timeout, interval).Should(BeEmpty())
	})
})
