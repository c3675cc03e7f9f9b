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
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers"
	"github.com/example/memcached-operator/internal/helm/actionclient"
	oplabels "github.com/example/memcached-operator/internal/labels"
)

// Helm's release records are Secrets in the CR's namespace: a tenant who may write Secrets there
// (the edit role) can write one that looks like the operator's. These specs are the attacks of
// such a tenant, against the paths that act on a record: an upgrade deletes what the last record
// lists and the next does not; an uninstall deletes what the last record lists; a pending record
// is recovered (rewritten) and upgraded from.
var _ = Describe("Release records are tenant input", func() {
	var (
		ctx   context.Context
		ns    string // the tenant's
		other string // another tenant's
	)
	BeforeEach(func() {
		ctx = context.Background()
		ns, other = newNamespace(ctx), newNamespace(ctx)
	})

	// victim is a Deployment of another tenant's, which a record of ns must never reach.
	victim := func() *appsv1.Deployment {
		labels := map[string]string{"app": "victim"}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: other},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/victim:1"}}}},
			},
		}
		Expect(k8sClient.Create(ctx, d)).To(Succeed())
		return d
	}
	// canary is a Secret in kube-system.
	canary := func() *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{GenerateName: "canary-", Namespace: metav1.NamespaceSystem}, StringData: map[string]string{"k": "v"}}
		Expect(k8sClient.Create(ctx, s)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(context.Background(), s))).To(Succeed()) })
		return s
	}
	survives := func(obj client.Object) {
		uid := obj.GetUID()
		Consistently(func(g Gomega) {
			live := obj.DeepCopyObject().(client.Object)
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), live)).To(Succeed())
			g.Expect(live.GetUID()).To(Equal(uid))
			g.Expect(live.GetDeletionTimestamp()).To(BeNil())
		}, 3*time.Second, interval).Should(Succeed(), "%T %s survives", obj, client.ObjectKeyFromObject(obj))
	}
	// manifestOf is a release manifest that lists objs, as Helm writes one.
	manifestOf := func(objs ...client.Object) string {
		var b strings.Builder
		for _, o := range objs {
			gvk, err := apiutil.GVKForObject(o, scheme)
			Expect(err).NotTo(HaveOccurred())
			fmt.Fprintf(&b, "---\n# Source: memcached/templates/x.yaml\napiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n  namespace: %s\n",
				gvk.GroupVersion(), gvk.Kind, o.GetName(), o.GetNamespace())
		}
		return b.String()
	}
	// forge writes a release record of the Memcached key, as a tenant can: shaped and labelled
	// like the operator's, with a controller reference to the Memcached when owned.
	forge := func(key types.NamespacedName, version int, status release.Status, manifest string, owned bool) *corev1.Secret {
		rel := &release.Release{Name: key.Name, Namespace: key.Namespace, Version: version, Manifest: manifest, Chart: chartAsVersion("1.1.0"),
			Config: map[string]any{}, Info: &release.Info{Status: status, Description: "forged"}}
		Expect(rawReleaseStore(key.Namespace).Create(rel)).To(Succeed())
		s := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", key.Name, version)}, s)).To(Succeed())
		s.Labels[oplabels.Record] = oplabels.Operator
		if owned {
			mc := &cachev1.Memcached{}
			Expect(k8sClient.Get(ctx, key, mc)).To(Succeed())
			Expect(controllerutil.SetControllerReference(mc, s, scheme)).To(Succeed())
		}
		Expect(k8sClient.Update(ctx, s)).To(Succeed())
		// Before the Memcached's own cleanup: a refused record holds its uninstall.
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(context.Background(), s))).To(Succeed()) })
		return s
	}
	// deployed makes a one-replica Memcached named name in ns, deleted when the spec ends, and
	// waits until its release is deployed.
	deployed := func(name string) types.NamespacedName {
		key := types.NamespacedName{Namespace: ns, Name: name}
		DeferCleanup(func() { deleteMemcached(context.Background(), key) })
		createMemcached(ctx, key, "  replicaCount: 1\n")
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		return key
	}
	refusal := func(key types.NamespacedName, condition string, secret *corev1.Secret) {
		GinkgoHelper()
		Eventually(memcachedCondition(ctx, key, condition), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", actionclient.ReasonRecordRefused),
			HaveField("Message", And(ContainSubstring("release record Secret %s/%s is not used", secret.Namespace, secret.Name),
				ContainSubstring("kubectl -n %s delete secret %s", secret.Namespace, secret.Name)))))
		Eventually(eventMessages(ctx, "Memcached", key, actionclient.ReasonRecordRefused), timeout, interval).Should(
			ContainElement(ContainSubstring(secret.Name)))
	}
	replicas := func(key types.NamespacedName) func(g Gomega) int32 {
		return func(g Gomega) int32 {
			d, err := serversOfRelease(ctx, key)
			g.Expect(err).NotTo(HaveOccurred())
			return ptr.Deref(d.Spec.Replicas, 0)
		}
	}
	setReplicas := func(key types.NamespacedName, n int) {
		Expect(k8sClient.Patch(ctx, &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}},
			client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicaCount":%d}}`, n)))).To(Succeed())
	}

	DescribeTable("refuses a forged record on the upgrade path; the other namespace's Deployment survives",
		func(owned bool) {
			key := deployed("mc")
			theirs := victim()

			forged := forge(key, 2, release.StatusDeployed, manifestOf(theirs), owned)
			setReplicas(key, 2)
			refusal(key, "Irreconcilable", forged)
			survives(theirs)
			Consistently(replicas(key), 2*time.Second, interval).Should(BeEquivalentTo(1), "no upgrade from the forged record")

			By("deleting the forged record, the way out the CR names")
			Expect(k8sClient.Delete(ctx, forged)).To(Succeed())
			Eventually(replicas(key), timeout, interval).Should(BeEquivalentTo(2))
			Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Reason", "UpgradeSuccessful"))
			Eventually(memcachedCondition(ctx, key, "Irreconcilable"), timeout, interval).Should(HaveField("Status", metav1.ConditionFalse))
			survives(theirs)
		},
		Entry("without an owner reference", false),
		Entry("with a forged owner reference to the Memcached", true),
	)

	DescribeTable("refuses a forged record on the uninstall path; a Secret in kube-system survives",
		func(owned bool) {
			key := types.NamespacedName{Namespace: ns, Name: "mc3"}
			createMemcached(ctx, key, "  replicaCount: 1\n")
			Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
			target := canary()

			forged := forge(key, 2, release.StatusDeployed, manifestOf(target), owned)
			// Once the operator has seen it (a record it has not seen yet is not read at all).
			refusal(key, "Irreconcilable", forged)
			Expect(k8sClient.Delete(ctx, &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns}})).To(Succeed())
			refusal(key, "ReleaseFailed", forged)
			survives(target)
			Expect(k8sClient.Get(ctx, key, &cachev1.Memcached{})).To(Succeed(), "the finalizer holds the CR while its records are refused")

			By("deleting the forged record: the uninstall goes on from the operator's own records")
			Expect(k8sClient.Delete(ctx, forged)).To(Succeed())
			Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, key, &cachev1.Memcached{})) }, timeout, interval).Should(BeTrue())
			Expect(releaseSecrets(ctx, ns, key.Name)).To(BeEmpty())
			survives(target)
		},
		Entry("without an owner reference", false),
		Entry("with a forged owner reference to the Memcached", true),
	)

	It("refuses a forged pending record instead of recovering it", func() {
		key := deployed("mc")
		theirs := victim()

		forged := forge(key, 2, release.StatusPendingUpgrade, manifestOf(theirs), true)
		setReplicas(key, 2)
		refusal(key, "Irreconcilable", forged)
		survives(theirs)
		Consistently(func(g Gomega) string {
			live := &corev1.Secret{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(forged), live)).To(Succeed())
			return live.ResourceVersion
		}, 2*time.Second, interval).Should(Equal(forged.ResourceVersion), "the forged record is neither recovered nor sealed")
		Expect(eventReasons(ctx, "Memcached", key)(Default)).NotTo(ContainElement("ReleaseRecovered"))
	})

	It("refuses its own record once someone edited its manifest, and installs again when that record is gone", func() {
		key := deployed("mc")
		theirs := victim()
		deploy, err := serversOfRelease(ctx, key)
		Expect(err).NotTo(HaveOccurred())

		By("adding the other namespace's Deployment to the manifest of the operator's record, its seal kept")
		own := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "sh.helm.release.v1.mc.v1"}, own)).To(Succeed())
		Expect(own.Annotations).To(HaveKey(oplabels.RecordSeal))
		rel := decodeRecord(own.Data["release"])
		rel["manifest"] = rel["manifest"].(string) + manifestOf(theirs)
		own.Data["release"] = encodeRecord(rel)
		Expect(k8sClient.Update(ctx, own)).To(Succeed())

		setReplicas(key, 2)
		refusal(key, "Irreconcilable", own)
		Eventually(memcachedCondition(ctx, key, "Irreconcilable"), timeout, interval).Should(
			HaveField("Message", ContainSubstring("changed after the operator wrote it")))
		survives(theirs)

		By("deleting the edited record: the operator installs the release again and adopts its own objects")
		Expect(k8sClient.Delete(ctx, own)).To(Succeed())
		Eventually(replicas(key), timeout, interval).Should(BeEquivalentTo(2))
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		live, err := serversOfRelease(ctx, key)
		Expect(err).NotTo(HaveOccurred())
		Expect(live.UID).To(Equal(deploy.UID), "its own StatefulSet is adopted, not made again")
		survives(theirs)
	})

	It("keeps an uninstall inside the release even when a record it sealed names what is not the release's", func() {
		// A record the operator sealed can only name the release's objects; this one is written
		// with the operator's keys to stand for a bug in that (or a stolen key): the second fence
		// must hold on its own. Whether the operator upgrades from it first (its manifest is not
		// what the chart renders) or uninstalls from it, Helm deletes what it names.
		key := types.NamespacedName{Namespace: ns, Name: "mc"}
		createMemcached(ctx, key, "  replicaCount: 1\n")
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		theirs := victim()
		tenants := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "tenants-own", Namespace: ns}}
		Expect(k8sClient.Create(ctx, tenants)).To(Succeed())

		releases := releaseStore(ctx, key)
		first, err := releases.Get(key.Name, 1)
		Expect(err).NotTo(HaveOccurred())
		reaching := *first
		reaching.Version, reaching.Manifest = 2, first.Manifest+manifestOf(theirs, tenants)
		reaching.Info = &release.Info{Status: release.StatusDeployed}
		first.Info.Status = release.StatusSuperseded
		Expect(releases.Update(first)).To(Succeed())
		Expect(releases.Create(&reaching)).To(Succeed())
		deleteMemcached(ctx, key)
		Expect(eventMessages(ctx, "Memcached", key, "ObjectLeftAlone")(Default)).To(ContainElements(
			ContainSubstring("Deployment %s/victim, which is not the release's: it is outside namespace %s", other, ns),
			ContainSubstring("ServiceAccount %s/tenants-own, which is not the release's: it carries neither the Helm annotations of release %s/mc", ns, ns)))
		survives(theirs)
		survives(tenants)
	})

	It("rotates its keys without a restart: a key added seals from then on, older records are sealed again, and the ring says when the older keys may go", func() {
		key := deployed("mc")
		ringKey := types.NamespacedName{Namespace: operatorNamespace, Name: actionclient.SealRingName}
		ring := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, ringKey, ring)).To(Succeed())
		newest := 0
		for id := range ring.Data {
			var n int
			_, err := fmt.Sscanf(id, "key-%d", &n)
			Expect(err).NotTo(HaveOccurred())
			newest = max(newest, n)
		}
		next := fmt.Sprintf("key-%d", newest+1)
		sealedWith := func(g Gomega) []string {
			secrets := &corev1.SecretList{}
			g.Expect(k8sClient.List(ctx, secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": key.Name})).To(Succeed())
			var keys []string
			for _, s := range secrets.Items {
				keys = append(keys, strings.Split(s.Annotations[oplabels.RecordSeal], ":")[1])
			}
			return keys
		}
		Expect(sealedWith(Default)).NotTo(ContainElement(next))
		By("a tenant's record that names the current key with a seal that does not hold: it holds no rotation back")
		forged := forge(key, 9, release.StatusSuperseded, "", true)
		forged.Annotations = map[string]string{oplabels.RecordSeal: fmt.Sprintf("v1:key-%d:AAAA", newest)}
		Expect(k8sClient.Update(ctx, forged)).To(Succeed())
		refusal(key, "Irreconcilable", forged)

		By("adding " + next + " to the ring, as docs/security.md says")
		fresh := make([]byte, 32)
		_, err := rand.Read(fresh)
		Expect(err).NotTo(HaveOccurred())
		ring.Data[next] = fresh
		Expect(k8sClient.Update(ctx, ring)).To(Succeed())
		Eventually(func(g Gomega) string {
			g.Expect(k8sClient.Get(ctx, ringKey, ring)).To(Succeed())
			return ring.Annotations[oplabels.RecordsSealedWith]
		}, timeout, interval).Should(Equal(next))
		Expect(k8sClient.Delete(ctx, forged)).To(Succeed())
		Expect(sealedWith(Default)).To(HaveEach(next))

		By("removing the older keys: the release is read and upgraded as before")
		ring.Data = map[string][]byte{next: fresh}
		Expect(k8sClient.Update(ctx, ring)).To(Succeed())
		setReplicas(key, 2)
		Eventually(replicas(key), timeout, interval).Should(BeEquivalentTo(2))
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Reason", "UpgradeSuccessful"))
		Expect(sealedWith(Default)).To(And(HaveLen(2), HaveEach(next)))
	})

	It("lets through only the release's namespace, the chart's kinds and, to change or delete, the release's objects", func() {
		key := deployed("mc")
		mc := &cachev1.Memcached{}
		Expect(k8sClient.Get(ctx, key, mc)).To(Succeed())
		mc.SetGroupVersionKind(cachev1.GroupVersion.WithKind("Memcached"))
		theirs := victim()
		tenants := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "tenants-own", Namespace: ns}}
		Expect(k8sClient.Create(ctx, tenants)).To(Succeed())

		chrt := chartAsVersion("1.2.0")
		recorder := events.NewFakeRecorder(20)
		fence, err := actionclient.NewFence(chrt, k8sClient.RESTMapper(), k8sClient, recorder)
		Expect(err).NotTo(HaveOccurred())
		fenced, err := client.New(fence.Wrap(mc, cfg), client.Options{Scheme: scheme, Mapper: k8sClient.RESTMapper()})
		Expect(err).NotTo(HaveOccurred())
		forbidden := func(err error, why string) {
			GinkgoHelper()
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "forbidden, got %v", err)
			Expect(err.Error()).To(ContainSubstring(why))
		}
		// As Helm sends it: JSON, unstructured.
		planted := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "planted", "namespace": other}}}
		forbidden(fenced.Create(ctx, planted),
			fmt.Sprintf("refused to create ConfigMap %s/planted: it is outside namespace %s of Memcached mc", other, ns))
		forbidden(fenced.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "planted", Namespace: ns}}),
			"the chart renders no object of that kind")
		forbidden(fenced.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "planted"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}}), "outside namespace")
		forbidden(fenced.Patch(ctx, tenants, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`))),
			"it carries neither the Helm annotations of release "+ns+"/mc nor a controller reference to the Memcached")
		Expect(fenced.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "created", Namespace: ns}})).To(Succeed(),
			"a kind of the chart in the release's namespace")
		Expect(fenced.Patch(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: key.Name + "-memcached", Namespace: ns}},
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`)))).To(Succeed(), "the release's own Service")

		By("a kind an earlier chart rendered may only be deleted")
		retiring, err := actionclient.NewFence(chrt, k8sClient.RESTMapper(), k8sClient, recorder, controllers.RetiredChartKinds...)
		Expect(err).NotTo(HaveOccurred())
		fencedRetiring, err := client.New(retiring.Wrap(mc, cfg), client.Options{Scheme: scheme, Mapper: k8sClient.RESTMapper()})
		Expect(err).NotTo(HaveOccurred())
		forbidden(fencedRetiring.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "planted", Namespace: ns},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}}}),
			"the chart no longer renders objects of that kind")
		Expect(apierrors.IsNotFound(fencedRetiring.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: ns}}))).
			To(BeTrue(), "a delete of the kind goes to the API server")

		By("a delete outside the fence is skipped, as if the object were gone, and said in an Event")
		Expect(apierrors.IsNotFound(fenced.Delete(ctx, theirs))).To(BeTrue())
		Expect(apierrors.IsNotFound(fenced.Delete(ctx, tenants))).To(BeTrue())
		survives(theirs)
		survives(tenants)
		Expect(recorder.Events).To(Receive(ContainSubstring("ObjectOutsideRelease")))
		var all []string
		for len(recorder.Events) > 0 {
			all = append(all, <-recorder.Events)
		}
		Expect(all).To(ContainElements(ContainSubstring("ObjectLeftAlone Release mc did not delete Deployment %s/victim", other),
			ContainSubstring("ObjectLeftAlone Release mc did not delete ServiceAccount %s/tenants-own", ns)))
	})
})

var _ = Describe("Pods are tenant input", func() {
	It("retires only pods labelled as the release's that no controller owns: the retired-at mark on a pod a controller owns changes nothing", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		key := types.NamespacedName{Namespace: ns, Name: "memcached-sample"} // its Deployment has its name
		DeferCleanup(func() { deleteMemcached(context.Background(), key) })
		createMemcached(ctx, key, "  replicaCount: 1\n")
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		setRollout(ctx, key, 1, 1, 1)
		pod := func(name string, owners []metav1.OwnerReference, annotations map[string]string) *corev1.Pod {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: owners, Annotations: annotations, Labels: map[string]string{
					oplabels.Name: oplabels.ChartName, oplabels.Instance: key.Name, oplabels.Component: "cache", oplabels.PartOf: oplabels.Operator}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "memcached", Image: relatedImage}}},
			}
			Expect(k8sClient.Create(ctx, p)).To(Succeed())
			return p
		}
		longAgo := map[string]string{oplabels.RetiredAt: "2000-01-01T00:00:00Z"}
		serving := pod("serving", []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "memcached-sample-5d4f8", UID: "4f1c8c3e-0000-4000-8000-000000000001",
			Controller: ptr.To(true)}}, longAgo)
		bare := pod("bare", nil, nil)

		By("retiring the bare pod, as a pod an earlier release left running")
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(bare), &corev1.Pod{}))
		},
			timeout, interval).Should(BeTrue())
		Consistently(func(g Gomega) {
			live := &corev1.Pod{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(serving), live)).To(Succeed())
			g.Expect(live.DeletionTimestamp).To(BeNil())
			g.Expect(live.Labels).To(Equal(serving.Labels), "still in the Service")
		}, 2*retireDelay, interval).Should(Succeed(), "a pod a controller owns is never retired, whatever its annotations say")
	})
})

var _ = Describe("Release records of earlier versions", func() {
	It("are sealed at start-up when a Memcached controls them and their manifests stay inside its release, and no others", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		controller := func(name string) metav1.OwnerReference {
			return metav1.OwnerReference{APIVersion: cachev1.GroupVersion.String(), Kind: "Memcached", Name: name,
				UID: types.UID("0d2e5e44-1111-4d5b-9c1a-" + fmt.Sprintf("%012d", len(name))), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
		}
		// As the earlier operator's storage wrote them: Helm's format, controlled by the Memcached
		// (which the operator is not started for here, so the records are left to the start-up).
		record := func(name, manifest string, owners ...metav1.OwnerReference) *corev1.Secret {
			rel := &release.Release{Name: name, Namespace: ns, Version: 1, Manifest: manifest, Chart: chartAsVersion("0.2.0"),
				Info: &release.Info{Status: release.StatusDeployed}}
			Expect(rawReleaseStore(ns).Create(rel)).To(Succeed())
			s := &corev1.Secret{}
			Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "sh.helm.release.v1." + name + ".v1"}, s)).To(Succeed())
			s.OwnerReferences = owners
			Expect(k8sClient.Update(ctx, s)).To(Succeed())
			return s
		}
		service := func(name string) string {
			return fmt.Sprintf("---\napiVersion: v1\nkind: Service\nmetadata:\n  name: %s-memcached\n", name)
		}
		ours := record("earlier", service("earlier"), controller("earlier"))
		reaching := record("reaching", service("reaching")+"---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: canary\n  namespace: kube-system\n", controller("reaching"))
		foreignKind := record("foreign-kind", "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: admin\n", controller("foreign-kind"))
		theirs := record("theirs", service("theirs"))

		done := startOperator(ctx, ns)
		Expect(done.Sealed).To(Equal(1))
		Expect(done.Refused).To(And(HaveLen(2),
			HaveKeyWithValue(ns+"/"+reaching.Name, ContainSubstring("Secret kube-system/canary: it is outside namespace "+ns)),
			HaveKeyWithValue(ns+"/"+foreignKind.Name, ContainSubstring("RoleBinding %s/admin: the chart renders no object of that kind", ns))))
		get := func(s *corev1.Secret) *corev1.Secret {
			live := &corev1.Secret{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(s), live)).To(Succeed())
			return live
		}
		Expect(get(ours).Labels).To(HaveKeyWithValue(oplabels.Record, oplabels.Operator))
		Expect(get(ours).Annotations).To(HaveKey(oplabels.RecordSeal))
		Expect(done.Written).To(Equal(map[types.NamespacedName]string{client.ObjectKeyFromObject(ours): get(ours).ResourceVersion}),
			"the version it wrote, which the release store reads live until the cache shows it")
		for _, s := range []*corev1.Secret{reaching, foreignKind, theirs} {
			Expect(get(s).ResourceVersion).To(Equal(s.ResourceVersion), "%s is left as it is", s.Name)
		}

		By("a record written after the operator started is not judged, whatever it says")
		later := record("later", service("later"), controller("later"))
		Expect(startOperatorAt(ctx, ns, later.CreationTimestamp.Time).Sealed).To(BeZero())
		Expect(get(later).ResourceVersion).To(Equal(later.ResourceVersion))
	})
})

// eventMessages returns the messages of the Events of one reason recorded on an object of kind.
func eventMessages(ctx context.Context, kind string, key types.NamespacedName, reason string) func(g Gomega) []string {
	return func(g Gomega) []string {
		events := &corev1.EventList{}
		g.Expect(k8sClient.List(ctx, events, client.InNamespace(key.Namespace))).To(Succeed())
		var messages []string
		for _, e := range events.Items {
			if e.InvolvedObject.Name == key.Name && e.InvolvedObject.Kind == kind && e.Reason == reason {
				messages = append(messages, e.Message)
			}
		}
		return messages
	}
}

// decodeRecord and encodeRecord read and write Helm's encoding of a release record (base64 of
// gzipped JSON), as anyone who can read and write the Secret can.
func decodeRecord(data []byte) map[string]any {
	raw, err := base64.StdEncoding.DecodeString(string(data))
	Expect(err).NotTo(HaveOccurred())
	r, err := gzip.NewReader(bytes.NewReader(raw))
	Expect(err).NotTo(HaveOccurred())
	plain, err := io.ReadAll(r)
	Expect(err).NotTo(HaveOccurred())
	rel := map[string]any{}
	Expect(json.Unmarshal(plain, &rel)).To(Succeed())
	return rel
}

func encodeRecord(rel map[string]any) []byte {
	plain, err := json.Marshal(rel)
	Expect(err).NotTo(HaveOccurred())
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, err = w.Write(plain)
	Expect(err).NotTo(HaveOccurred())
	Expect(w.Close()).To(Succeed())
	return []byte(base64.StdEncoding.EncodeToString(gz.Bytes()))
}
