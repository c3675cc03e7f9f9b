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
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

const (
	// timeout is how long a spec waits for what the operator does; the race detector makes it
	// several times slower (make test-floor), beside the e2e suite on the same 2 cores.
	timeout  = 30 * time.Second * raceSlowdown
	interval = 100 * time.Millisecond
)

var _ = Describe("Memcached (Helm API)", func() {
	var (
		ctx context.Context
		ns  string
		key types.NamespacedName
	)

	BeforeEach(func() {
		ctx = context.Background()
		ns = newNamespace(ctx)
		key = types.NamespacedName{Namespace: ns, Name: "memcached-sample"}
	})

	It("installs the chart with the CR's values, upgrades on change and uninstalls on delete", func() {
		By("creating a Memcached")
		mc := &cachev1.Memcached{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns},
			Spec: cachev1.MemcachedSpec{
				ReplicaCount: ptr.To[int32](3),
				Memcached:    &cachev1.MemcachedServer{MaxMemoryMB: 128},
			},
		}
		Expect(k8sClient.Create(ctx, mc)).To(Succeed())
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "InstallSuccessful")))

		By("finding the StatefulSet, Services, PodDisruptionBudget and ServiceAccount with the values")
		deploy := &appsv1.StatefulSet{}
		Expect(k8sClient.Get(ctx, key, deploy)).To(Succeed())
		Expect(deploy.Spec.Replicas).To(HaveValue(BeEquivalentTo(3)))
		c := deploy.Spec.Template.Spec.Containers[0]
		Expect(c.Args).To(ContainElements("-m", "128", "-c", "1024", "-t", "4", "-I", "1m"))
		Expect(c.Image).To(Equal(relatedImage), "RELATED_IMAGE_MEMCACHED fills an image the CR leaves unset")
		Expect(c.Env).To(BeEmpty(), "the operator's proxy does not reach memcached, which makes no outbound calls")
		Expect(c.Resources.Requests.Memory().String()).To(Equal("160Mi"), "memory request follows maxMemoryMB")
		Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
		Expect(deploy.Spec.Template.Spec.SecurityContext.RunAsUser).To(HaveValue(BeEquivalentTo(11211)))
		Expect(deploy.OwnerReferences).To(ContainElement(HaveField("Name", key.Name)))

		svc := &corev1.Service{}
		Expect(k8sClient.Get(ctx, key, svc)).To(Succeed())
		Expect(svc.Spec.Ports).To(ContainElement(HaveField("Port", BeEquivalentTo(11211))))
		pdb := &policyv1.PodDisruptionBudget{}
		Expect(k8sClient.Get(ctx, key, pdb)).To(Succeed())
		Expect(pdb.Spec.MaxUnavailable.IntValue()).To(Equal(1))
		Expect(k8sClient.Get(ctx, key, &corev1.ServiceAccount{})).To(Succeed())
		np := &networkingv1.NetworkPolicy{}
		Expect(k8sClient.Get(ctx, key, np)).To(Succeed())
		Expect(np.Spec.Ingress).To(HaveLen(1), "memcached's port only: metrics are off")
		Expect(np.Spec.Ingress[0].From).To(ConsistOf(
			networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{}},
			networkingv1.NetworkPolicyPeer{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "memcached-operator-system"}},
				PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "memcached-operator", "control-plane": "controller-manager"}},
			}), "memcached is reached from its namespace and the operator only")
		Expect(releaseSecrets(ctx, ns, key.Name)).To(ConsistOf("sh.helm.release.v1.memcached-sample.v1"))

		By("listing the servers, by their own DNS names, in status and in the ConfigMap")
		servers := func(n int) []string {
			var list []string
			for i := range n {
				list = append(list, fmt.Sprintf("memcached-sample-%d.memcached-sample-headless.%s.svc:11211", i, ns))
			}
			return list
		}
		Eventually(memcachedStatus(ctx, key), timeout, interval).Should(And(
			HaveField("Servers", Equal(servers(3))), HaveField("ServersConfigMap", "memcached-sample-servers")))
		list := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "memcached-sample-servers"}, list)).To(Succeed())
		Expect(list.Data).To(HaveKeyWithValue("MEMCACHED_SERVERS", strings.Join(servers(3), ",")))
		headless := &corev1.Service{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "memcached-sample-headless"}, headless)).To(Succeed())
		Expect(headless.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
		Expect(deployedCondition(ctx, key)(Default)).To(HaveField("Message", ContainSubstring(strings.Join(servers(3), ","))),
			"the Deployed message (the chart's notes) lists the servers")

		By("changing the spec, which upgrades the release")
		// A merge patch: the operator writes the status meanwhile, an update could conflict.
		Expect(k8sClient.Patch(ctx, mc, client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"replicaCount":5,"memcached":{"threads":8},"image":{"tag":"1.6.39"}}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, deploy)).To(Succeed())
			g.Expect(deploy.Spec.Replicas).To(HaveValue(BeEquivalentTo(5)))
			g.Expect(deploy.Spec.Template.Spec.Containers[0].Args).To(ContainElements("-t", "8"))
			g.Expect(deploy.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.com/mirror/memcached:1.6.39"),
				"a tag in the CR applies to the operator's image repository")
		}, timeout, interval).Should(Succeed())
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Reason", "UpgradeSuccessful"))
		Expect(releaseSecrets(ctx, ns, key.Name)).To(ContainElement("sh.helm.release.v1.memcached-sample.v2"))
		Eventually(memcachedStatus(ctx, key), timeout, interval).Should(HaveField("Servers", Equal(servers(5))), "scaling adds the next names")
		Eventually(func(g Gomega) map[string]string {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "memcached-sample-servers"}, list)).To(Succeed())
			return list.Data
		}, timeout, interval).Should(HaveKeyWithValue("MEMCACHED_SERVERS", strings.Join(servers(5), ",")))

		By("naming the deployed release and its revision in status, and not its rendered manifest")
		Eventually(func(g Gomega) *cachev1.HelmRelease {
			g.Expect(k8sClient.Get(ctx, key, mc)).To(Succeed())
			return mc.Status.DeployedRelease
		}, timeout, interval).Should(HaveValue(Equal(cachev1.HelmRelease{Name: key.Name, Revision: 2})))
		raw := &unstructured.Unstructured{}
		raw.SetGroupVersionKind(cachev1.GroupVersion.WithKind("Memcached"))
		Expect(k8sClient.Get(ctx, key, raw)).To(Succeed())
		Expect(raw.Object["status"]).To(HaveKeyWithValue("deployedRelease", Equal(map[string]any{"name": key.Name, "revision": int64(2)})))

		By("deleting the Memcached, which uninstalls the release and leaves nothing")
		Expect(k8sClient.Delete(ctx, mc)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, key, &cachev1.Memcached{}))
		}, timeout, interval).Should(BeTrue(), "the uninstall finalizer is removed once the release is gone")
		for _, obj := range []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}, &policyv1.PodDisruptionBudget{}, &corev1.ServiceAccount{}} {
			err := k8sClient.Get(ctx, key, obj)
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s should be gone, got %v", obj, key, err)
		}
		for _, obj := range []client.Object{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "memcached-sample-headless"}}, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "memcached-sample-servers"}}} {
			err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: obj.GetName()}, obj)
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s should be gone, got %v", obj, obj.GetName(), err)
		}
		Expect(releaseSecrets(ctx, ns, key.Name)).To(BeEmpty())
	})

	It("repairs drift: a deleted StatefulSet comes back, a hand-scaled one is scaled back", func() {
		mc := &cachev1.Memcached{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns},
			Spec:       cachev1.MemcachedSpec{ReplicaCount: ptr.To[int32](2)},
		}
		Expect(k8sClient.Create(ctx, mc)).To(Succeed())
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))

		deploy := &appsv1.StatefulSet{}
		Expect(k8sClient.Get(ctx, key, deploy)).To(Succeed())
		Expect(k8sClient.Delete(ctx, deploy)).To(Succeed())
		Eventually(func(g Gomega) {
			fresh := &appsv1.StatefulSet{}
			g.Expect(k8sClient.Get(ctx, key, fresh)).To(Succeed())
			g.Expect(fresh.UID).NotTo(Equal(deploy.UID))
		}, timeout, interval).Should(Succeed())

		Expect(k8sClient.Get(ctx, key, deploy)).To(Succeed())
		deploy.Spec.Replicas = ptr.To[int32](7)
		Expect(k8sClient.Update(ctx, deploy)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, deploy)).To(Succeed())
			g.Expect(deploy.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
		}, timeout, interval).Should(Succeed())
	})

	It("recovers a release left pending by an operator stopped in the middle of an upgrade", func() {
		mc := &cachev1.Memcached{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns},
			Spec:       cachev1.MemcachedSpec{ReplicaCount: ptr.To[int32](1)},
		}
		Expect(k8sClient.Create(ctx, mc)).To(Succeed())
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))

		By("leaving the release pending-upgrade, as a killed operator pod does")
		releases := releaseStore(ctx, key)
		rel, err := releases.Last(key.Name)
		Expect(err).NotTo(HaveOccurred())
		rel.Info.Status = release.StatusPendingUpgrade
		Expect(releases.Update(rel)).To(Succeed())

		By("changing the spec: the operator recovers the release and upgrades it")
		Expect(k8sClient.Patch(ctx, mc, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicaCount":2}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			deploy := &appsv1.StatefulSet{}
			g.Expect(k8sClient.Get(ctx, key, deploy)).To(Succeed())
			g.Expect(deploy.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
		}, timeout, interval).Should(Succeed())
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "UpgradeSuccessful")))
		recovered, err := releases.Get(key.Name, rel.Version)
		Expect(err).NotTo(HaveOccurred())
		Expect(recovered.Info.Status).To(Equal(release.StatusSuperseded), "the cut-off revision is kept and superseded by the upgrade")
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement("ReleaseRecovered"))
	})
})
