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
	"fmt"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers"
)

// Each condition and field of a Memcached's status has one writer, which writes only its part
// (docs/development.md, "Who writes a Memcached's status"). The specs write as the autopilot and
// the TLS controller, whose conditions the running operator leaves alone on a cache without
// autoscaling or TLS, while the operator's Helm side and operand write theirs.
var _ = Describe("The status's writers", func() {
	ctx := context.Background()

	conditionsOf := func(key types.NamespacedName) func(g Gomega) map[string]string {
		return func(g Gomega) map[string]string {
			mc := &cachev1.Memcached{}
			g.Expect(k8sClient.Get(ctx, key, mc)).To(Succeed())
			out := map[string]string{}
			for _, c := range mc.Status.Conditions {
				out[c.Type] = string(c.Status) + " " + c.Message
			}
			return out
		}
	}
	written := func(message string, types ...string) *cachev1.MemcachedStatus {
		st := &cachev1.MemcachedStatus{}
		for _, t := range types {
			st.Conditions = append(st.Conditions, cachev1.HelmCondition{Type: t, Status: metav1.ConditionTrue,
				Reason: "Written", Message: message, LastTransitionTime: metav1.Now()})
		}
		return st
	}
	deployed := func(key types.NamespacedName) *cachev1.Memcached {
		createMemcached(ctx, key, "  replicaCount: 1\n")
		Eventually(conditionsOf(key), timeout, interval).Should(And(
			HaveKeyWithValue("Deployed", HavePrefix("True")), HaveKey(cachev1.ConditionAvailable)))
		mc := &cachev1.Memcached{}
		Expect(k8sClient.Get(ctx, key, mc)).To(Succeed())
		return mc
	}

	It("write at once, each from what it read long before, and lose nothing: every condition ends as its owner last wrote it", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "writers"}
		read := deployed(key) // both write from this read: a full update from it would undo the other's writes
		const rounds = 40
		var wg sync.WaitGroup
		for owner, types := range map[string][]string{
			"autopilot": {cachev1.ConditionScalingActive, cachev1.ConditionScalingLimited},
			"tls":       {cachev1.ConditionCertificatesReady},
		} {
			wg.Go(func() {
				defer GinkgoRecover()
				for i := 1; i <= rounds; i++ {
					Expect(controllers.WriteStatusAs(ctx, k8sClient, owner, read.DeepCopy(), written(fmt.Sprintf("write %d of %s", i, owner), types...))).To(Succeed())
				}
			})
		}
		wg.Wait()
		Expect(conditionsOf(key)(Default)).To(And(
			HaveKeyWithValue(cachev1.ConditionScalingActive, "True write 40 of autopilot"),
			HaveKeyWithValue(cachev1.ConditionScalingLimited, "True write 40 of autopilot"),
			HaveKeyWithValue(cachev1.ConditionCertificatesReady, "True write 40 of tls"),
			HaveKeyWithValue("Deployed", HavePrefix("True")), HaveKey(cachev1.ConditionAvailable)),
			"the other writers' conditions stay too")
	})

	It("take out a condition, or a condition's message, the owner no longer writes, though a full update of an earlier release made another field manager own it too", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "upgraded"}
		deployed(key)
		By("writing the autopilot's two conditions as releases before 1.3.0 did: a full update of status")
		Eventually(func(g Gomega) {
			mc := &cachev1.Memcached{}
			g.Expect(k8sClient.Get(ctx, key, mc)).To(Succeed())
			mc.Status.Conditions = append(mc.Status.Conditions, written("by a full update", cachev1.ConditionScalingActive, cachev1.ConditionScalingLimited).Conditions...)
			g.Expect(k8sClient.Status().Update(ctx, mc)).To(Succeed())
		}, timeout, interval).Should(Succeed())

		By("the autopilot, which writes its part alone now, saying both, ScalingActive with no message")
		mc := &cachev1.Memcached{}
		Expect(k8sClient.Get(ctx, key, mc)).To(Succeed())
		st := written("by the autopilot", cachev1.ConditionScalingActive, cachev1.ConditionScalingLimited)
		st.Conditions[0].Message = ""
		Expect(controllers.WriteStatusAs(ctx, k8sClient, "autopilot", mc, st)).To(Succeed())
		Expect(conditionsOf(key)(Default)).To(And(
			HaveKeyWithValue(cachev1.ConditionScalingActive, "True "),
			HaveKeyWithValue(cachev1.ConditionScalingLimited, "True by the autopilot")))

		By("the autopilot saying ScalingActive only")
		Expect(controllers.WriteStatusAs(ctx, k8sClient, "autopilot", mc, written("by the autopilot", cachev1.ConditionScalingActive))).To(Succeed())
		Expect(conditionsOf(key)(Default)).To(And(
			HaveKeyWithValue(cachev1.ConditionScalingActive, "True by the autopilot"),
			Not(HaveKey(cachev1.ConditionScalingLimited)),
			HaveKeyWithValue("Deployed", HavePrefix("True"))))
	})

	It("leave a CR deleted since their read alone: the write ends without an error, and the reconcile with it", func() {
		// Never created: to the API server, the same as deleted after the reconcile's read.
		mc := &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: newNamespace(ctx), Name: "gone"},
			Status: cachev1.MemcachedStatus{TLS: &cachev1.TLSStatus{ClientSecret: "gone-client-tls"}}}
		for _, owner := range []string{"operand", "stats", "autopilot"} {
			res, err := controllers.AfterStatusWrite(controllers.WriteStatusAs(ctx, k8sClient, owner, mc.DeepCopy(), written("to a gone CR")))
			Expect(err).NotTo(HaveOccurred(), owner)
			Expect(res).To(BeZero(), owner)
		}
		Expect(controllers.WriteTLSStatus(ctx, k8sClient, mc.DeepCopy(), true)).To(Succeed())
		Expect(controllers.WriteTLSStatus(ctx, k8sClient, mc.DeepCopy(), false)).To(Succeed())
	})
})
