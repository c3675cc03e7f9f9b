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
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers"
	"github.com/example/memcached-operator/internal/helm"
	oplabels "github.com/example/memcached-operator/internal/labels"
)

// underReleasedCRD runs f while the API server serves a CRD (a file of config/crd/bases) as the
// release version shipped it, and serves this tree's CRD again afterwards: what users created
// before this release's admission rules stays in the cluster, and the operator must handle it.
func underReleasedCRD(ctx context.Context, version, file string, probe *unstructured.Unstructured, f func()) {
	current := readCRDFile(filepath.Join("config", "crd", "bases", file))
	released := &apiextensionsv1.CustomResourceDefinition{}
	raw, err := exec.Command("git", "show", releaseCommit(version)+":config/crd/bases/"+file).Output()
	Expect(err).NotTo(HaveOccurred(), "the tests need the repository's history")
	Expect(yaml.Unmarshal(raw, released)).To(Succeed())

	serve := func(crd *apiextensionsv1.CustomResourceDefinition, probeAccepted bool) {
		Eventually(func(g Gomega) {
			live := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Name: crd.Name}, live)).To(Succeed())
			live.Spec.Versions = crd.Spec.Versions
			g.Expect(k8sClient.Update(ctx, live)).To(Succeed())
		}, timeout, interval).Should(Succeed())
		// The API server takes up a schema change a moment later: wait until the probe says so.
		Eventually(func() bool {
			return k8sClient.Create(ctx, probe.DeepCopy(), client.DryRunAll) == nil
		}, timeout, interval).Should(Equal(probeAccepted), "the API server serves the CRD of %s", version)
	}
	serve(released, true)
	defer serve(current, false)
	f()
}

func readCRDFile(path string) *apiextensionsv1.CustomResourceDefinition {
	raw, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	crd := &apiextensionsv1.CustomResourceDefinition{}
	Expect(yaml.Unmarshal(raw, crd)).To(Succeed())
	return crd
}

var _ = Describe("What was made before 1.0.0", func() {
	var (
		ctx context.Context
		ns  string
	)
	BeforeEach(func() {
		ctx = context.Background()
		ns = newNamespace(ctx)
	})

	It("refuses a memcached version it does not run, with a condition and an Event, and leaves the pods as they are", func() {
		key := types.NamespacedName{Namespace: ns, Name: "memcached-sample"}
		createMemcached(ctx, key, "  replicaCount: 1\n")
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		probe := cr("Memcached", ns, "probe", "  image: {tag: '1.5.22'}")
		underReleasedCRD(ctx, "0.2.0", "cache.my.domain_memcacheds.yaml", probe, func() {
			Expect(k8sClient.Patch(ctx, &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns}},
				client.RawPatch(types.MergePatchType, []byte(`{"spec":{"image":{"tag":"1.5.22"}}}`)))).To(Succeed())
		})
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement("UnsupportedVersion"))
		// Before 1.30 the API server checks a status write against the whole schema, the spec the
		// rule now refuses included, so the Event is all the operator can say there (docs/security.md).
		if kubernetesAtLeast(30) {
			Eventually(memcachedCondition(ctx, key, "Irreconcilable"), timeout, interval).Should(And(
				HaveField("Status", metav1.ConditionTrue), HaveField("Message", ContainSubstring(`"1.5.22" is not supported`))))
		}
		Consistently(func(g Gomega) string {
			s := &appsv1.StatefulSet{}
			g.Expect(k8sClient.Get(ctx, key, s)).To(Succeed())
			return s.Spec.Template.Spec.Containers[0].Image
		}, 3*time.Second, interval).Should(Equal(relatedImage))
		Expect(releaseSecrets(ctx, ns, key.Name)).To(ConsistOf("sh.helm.release.v1.memcached-sample.v1"))
	})

	It("no longer shows the rendered manifest that status held before 1.0.0", func() {
		key := types.NamespacedName{Namespace: ns, Name: "memcached-sample"}
		createMemcached(ctx, key, "  replicaCount: 1\n")
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		probe := cr("Memcached", ns, "probe", "  image: {tag: latest}")
		underReleasedCRD(ctx, "0.2.0", "cache.my.domain_memcacheds.yaml", probe, func() {
			// What the 0.2.0 operator wrote, and its CRD kept.
			Eventually(func(g Gomega) {
				raw := &unstructured.Unstructured{}
				raw.SetGroupVersionKind(cachev1.GroupVersion.WithKind("Memcached"))
				g.Expect(k8sClient.Get(ctx, key, raw)).To(Succeed())
				g.Expect(unstructured.SetNestedField(raw.Object, "apiVersion: apps/v1\nkind: Deployment\n", "status", "deployedRelease", "manifest")).To(Succeed())
				g.Expect(k8sClient.Status().Update(ctx, raw)).To(Succeed())
			}, timeout, interval).Should(Succeed())
		})
		raw := &unstructured.Unstructured{}
		raw.SetGroupVersionKind(cachev1.GroupVersion.WithKind("Memcached"))
		Expect(k8sClient.Get(ctx, key, raw)).To(Succeed())
		Expect(raw.Object["status"]).To(HaveKeyWithValue("deployedRelease", Not(HaveKey("manifest"))))
	})

	It("says why it cannot reconcile a Memcached whose name Helm cannot use, and lets it be deleted at once", func() {
		// Older API servers validate every update against the whole schema, so not even the
		// finalizer can go (docs/security.md: delete such CRs before the upgrade there).
		skipBelowKubernetes(30, "CRD validation ratcheting, which lets an update through with the name unchanged")
		key := types.NamespacedName{Namespace: ns, Name: strings.Repeat("m", 60)}
		probe := cr("Memcached", ns, strings.Repeat("p", 60), "  {}")
		underReleasedCRD(ctx, "0.2.0", "cache.my.domain_memcacheds.yaml", probe, func() {
			createMemcached(ctx, key, "  replicaCount: 1\n")
			// The Helm reconciler adds its finalizer first thing; once it has, the name rule may return.
			Eventually(func(g Gomega) []string {
				mc := &cachev1.Memcached{}
				g.Expect(k8sClient.Get(ctx, key, mc)).To(Succeed())
				return mc.Finalizers
			}, timeout, interval).ShouldNot(BeEmpty())
		})
		Eventually(memcachedCondition(ctx, key, "Irreconcilable"), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue),
			HaveField("Message", And(ContainSubstring("at most 53 characters"), ContainSubstring("cannot be reconciled")))))
		Expect(releaseSecrets(ctx, ns, key.Name)).To(BeEmpty())

		By("deleting it: no release ever existed, so nothing holds the finalizer")
		Expect(k8sClient.Delete(ctx, &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns}})).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, key, &cachev1.Memcached{})) }, 10*time.Second, interval).
			Should(BeTrue(), "the Memcached is gone at once, not stuck in Terminating")
	})

	It("says why it cannot reconcile a MemcachedBackup whose name cannot be a label value", func() {
		key := types.NamespacedName{Namespace: ns, Name: strings.Repeat("b", 70)}
		probe := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cache.my.domain/v1", "kind": "MemcachedBackup",
			"metadata": map[string]any{"name": strings.Repeat("p", 70), "namespace": ns}, "spec": map[string]any{"size": int64(1)}}}
		underReleasedCRD(ctx, "0.2.0", "cache.my.domain_memcachedbackups.yaml", probe, func() {
			Expect(k8sClient.Create(ctx, &cachev1.MemcachedBackup{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns},
				Spec: cachev1.MemcachedBackupSpec{Size: 1}})).To(Succeed())
		})
		Eventually(backupStatus(ctx, key), timeout, interval).Should(WithTransform(func(st cachev1.MemcachedBackupStatus) string {
			if c := meta.FindStatusCondition(st.Conditions, cachev1.ConditionDegraded); c != nil && c.Status == metav1.ConditionTrue {
				return c.Reason + ": " + c.Message
			}
			return ""
		}, And(HavePrefix("InvalidName: "), ContainSubstring("at most 63 characters"))))
		Expect(k8sClient.Get(ctx, key, &appsv1.Deployment{})).To(Satisfy(apierrors.IsNotFound))
		Expect(k8sClient.Delete(ctx, &cachev1.MemcachedBackup{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns}})).To(Succeed())
	})
})

var _ = Describe("Objects the operator did not make", func() {
	var (
		ctx context.Context
		ns  string
	)
	BeforeEach(func() {
		ctx = context.Background()
		ns = newNamespace(ctx)
	})

	// A user's workload: labels, selector and pods of their own, no owner and no Helm metadata.
	theirLabels := map[string]string{"app": "theirs"}
	theirPods := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: theirLabels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/theirs:1"}}},
	}
	// foreignDeployment is a Deployment a user made.
	foreignDeployment := func(name string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: theirLabels},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: theirLabels}, Template: theirPods}}
		Expect(k8sClient.Create(ctx, d)).To(Succeed())
		return d
	}
	// foreignStatefulSet is a StatefulSet a user made.
	foreignStatefulSet := func(name string) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: theirLabels},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: theirLabels}, Template: theirPods}}
		Expect(k8sClient.Create(ctx, s)).To(Succeed())
		return s
	}
	// untouched asserts that an object is still the one its maker made, unchanged.
	untouched := func(obj client.Object) {
		Consistently(func(g Gomega) {
			live := obj.DeepCopyObject().(client.Object)
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), live)).To(Succeed())
			g.Expect(live.GetUID()).To(Equal(obj.GetUID()))
			g.Expect(live.GetGeneration()).To(Equal(obj.GetGeneration()))
			g.Expect(live.GetOwnerReferences()).To(Equal(obj.GetOwnerReferences()))
			g.Expect(live.GetLabels()).To(Equal(obj.GetLabels()))
		}, 3*time.Second, interval).Should(Succeed())
	}
	degradedReason := func(key types.NamespacedName) func(g Gomega) string {
		return func(g Gomega) string {
			st := backupStatus(ctx, key)(g)
			if c := meta.FindStatusCondition(st.Conditions, cachev1.ConditionDegraded); c != nil && c.Status == metav1.ConditionTrue {
				return c.Reason + ": " + c.Message
			}
			return ""
		}
	}

	It("does not adopt or rewrite a Deployment in a MemcachedBackup's name, and makes its own once that is gone", func() {
		key := types.NamespacedName{Namespace: ns, Name: "backup"}
		theirs := foreignDeployment(key.Name)
		Expect(k8sClient.Create(ctx, &cachev1.MemcachedBackup{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns},
			Spec: cachev1.MemcachedBackupSpec{Size: 2}})).To(Succeed())
		Eventually(degradedReason(key), timeout, interval).Should(And(
			HavePrefix("DeploymentNotOwned: "), ContainSubstring("it has no owner")))
		Eventually(eventReasons(ctx, "MemcachedBackup", key), timeout, interval).Should(ContainElement("DeploymentNotOwned"))
		untouched(theirs)

		By("removing their Deployment, which lets the backup make its own")
		Expect(k8sClient.Delete(ctx, theirs)).To(Succeed())
		Eventually(func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(k8sClient.Get(ctx, key, d)).To(Succeed())
			g.Expect(metav1.GetControllerOf(d)).To(HaveField("Kind", "MemcachedBackup"))
		}, timeout, interval).Should(Succeed())
	})

	It("runs a MemcachedBackup of a Memcached's name beside it: its own Deployment, nothing of the Memcached's touched", func() {
		mcKey := types.NamespacedName{Namespace: ns, Name: "memcached-a"}
		createMemcached(ctx, mcKey, "  replicaCount: 1\n")
		Eventually(deployedCondition(ctx, mcKey), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		servers := &appsv1.StatefulSet{}
		Expect(k8sClient.Get(ctx, mcKey, servers)).To(Succeed())

		Expect(k8sClient.Create(ctx, &cachev1.MemcachedBackup{ObjectMeta: metav1.ObjectMeta{Name: mcKey.Name, Namespace: ns},
			Spec: cachev1.MemcachedBackupSpec{Size: 2}})).To(Succeed())
		Eventually(func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(k8sClient.Get(ctx, mcKey, d)).To(Succeed())
			g.Expect(metav1.GetControllerOf(d)).To(HaveField("Kind", "MemcachedBackup"))
		}, timeout, interval).Should(Succeed())
		untouched(servers)
		Expect(deployedCondition(ctx, mcKey)(Default)).To(HaveField("Status", metav1.ConditionTrue))
	})

	It("does not take over a Service in its headless Service's name that someone else made", func() {
		theirs := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "cache-memcached-headless", Namespace: ns, Labels: map[string]string{"app": "theirs"}},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
		Expect(k8sClient.Create(ctx, theirs)).To(Succeed())

		mcKey := types.NamespacedName{Namespace: ns, Name: "cache"} // its objects are named cache-memcached
		createMemcached(ctx, mcKey, "  replicaCount: 1\n")
		Eventually(memcachedCondition(ctx, mcKey, "ReleaseFailed"), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue),
			HaveField("Message", And(ContainSubstring("was made by someone else"), ContainSubstring(`Service "cache-memcached-headless"`)))))
		Eventually(eventReasons(ctx, "Memcached", mcKey), timeout, interval).Should(ContainElement("NameConflict"))
		untouched(theirs)
		Expect(releaseSecrets(ctx, ns, mcKey.Name)).To(BeEmpty(), "nothing was installed")

		By("deleting the Memcached, which removes nothing of theirs")
		deleteMemcached(ctx, mcKey)
		untouched(theirs)
	})

	It("does not adopt someone else's plain StatefulSet in its servers' name, which its cache keeps as a skeleton", func() {
		// Not labelled as the chart's: the cache keeps its name and labels only (skeletonOfOthers),
		// and Helm's existence check of it goes to the API server.
		theirs := foreignStatefulSet("plain-memcached")

		mcKey := types.NamespacedName{Namespace: ns, Name: "plain"} // its StatefulSet is named plain-memcached
		createMemcached(ctx, mcKey, "  replicaCount: 1\n")
		Eventually(memcachedCondition(ctx, mcKey, "ReleaseFailed"), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue),
			HaveField("Message", And(ContainSubstring("was made by someone else"), ContainSubstring(`StatefulSet "plain-memcached"`)))))
		untouched(theirs)
		Expect(releaseSecrets(ctx, ns, mcKey.Name)).To(BeEmpty(), "nothing was installed")

		deleteMemcached(ctx, mcKey)
		untouched(theirs)
	})

	It("leaves the first of two Memcacheds whose objects would share names alone, and tells the second why", func() {
		first := types.NamespacedName{Namespace: ns, Name: "x-memcached"}
		createMemcached(ctx, first, "  replicaCount: 1\n")
		Eventually(deployedCondition(ctx, first), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		firstDeploy := &appsv1.StatefulSet{}
		Expect(k8sClient.Get(ctx, first, firstDeploy)).To(Succeed())

		second := types.NamespacedName{Namespace: ns, Name: "x"} // its objects are named x-memcached too
		createMemcached(ctx, second, "  replicaCount: 2\n")
		Eventually(memcachedCondition(ctx, second, "ReleaseFailed"), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue),
			HaveField("Message", And(ContainSubstring("rename this Memcached"), ContainSubstring(`"meta.helm.sh/release-name" must equal "x"`)))))
		untouched(firstDeploy)

		deleteMemcached(ctx, second)
		untouched(firstDeploy)
		Expect(deployedCondition(ctx, first)(Default)).To(HaveField("Status", metav1.ConditionTrue))
	})

	It("refuses a record of the 0.1.0 chart that names a Deployment a user put in its Deployment's place, and leaves that Deployment alone", func() {
		key := types.NamespacedName{Namespace: ns, Name: "memcached-sample"}
		installRelease(ctx, ns, key.Name, chartOfRelease("0.1.0"), map[string]any{"replicaCount": 1})
		By("replacing the release's Deployment with one of the user's own, of the same name")
		Expect(k8sClient.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns}})).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, key, &appsv1.Deployment{})) }, timeout, interval).Should(BeTrue())
		theirs := foreignDeployment(key.Name)

		createMemcached(ctx, key, "  replicaCount: 1\n")
		ownRecords(ctx, key) // judged by its manifest at start-up: it names the user's Deployment
		Eventually(memcachedCondition(ctx, key, "ReleaseFailed"), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "ReleaseRecordRefused"),
			HaveField("Message", ContainSubstring("sh.helm.release.v1.memcached-sample.v1"))))
		untouched(theirs)

		By("deleting the refused record: the release is installed again, beside the user's Deployment")
		Expect(k8sClient.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.memcached-sample.v1", Namespace: ns}})).To(Succeed())
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		Expect(k8sClient.Get(ctx, key, &appsv1.StatefulSet{})).To(Succeed())
		untouched(theirs)
	})

	It("does not adopt back, when it repairs drift, an object someone took over from the release", func() {
		key := types.NamespacedName{Namespace: ns, Name: "memcached-sample"}
		createMemcached(ctx, key, "  replicaCount: 1\n")
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))

		By("a user taking the release's Service over: Helm's ownership metadata gone, labels and ports their own")
		theirs := &corev1.Service{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, theirs)).To(Succeed())
			theirs.Labels = map[string]string{"app": "theirs"}
			theirs.Annotations = nil
			theirs.OwnerReferences = nil
			theirs.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80}}
			g.Expect(k8sClient.Update(ctx, theirs)).To(Succeed())
		}, timeout, interval).Should(Succeed())

		Eventually(memcachedCondition(ctx, key, "Irreconcilable"), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Message", ContainSubstring(`Service "memcached-sample"`))))
		Consistently(func(g Gomega) {
			live := &corev1.Service{}
			g.Expect(k8sClient.Get(ctx, key, live)).To(Succeed())
			g.Expect(live.ResourceVersion).To(Equal(theirs.ResourceVersion), "not written to since")
		}, 2*reconcilePeriod, interval).Should(Succeed(), "the user's Service stays as they made it")
	})

	It("leaves a Helm release of the same name that someone else made alone, and says why", func() {
		key := types.NamespacedName{Namespace: ns, Name: "shared-name"}
		By("installing a release with the helm CLI, before any Memcached of that name")
		installRelease(ctx, ns, key.Name, chartAsVersion("0.2.0"), map[string]any{"replicaCount": 1})
		records := &corev1.SecretList{}
		Expect(k8sClient.List(ctx, records, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": key.Name})).To(Succeed())
		Expect(records.Items).To(HaveLen(1))
		theirRecord := records.Items[0]
		theirDeploy := &appsv1.StatefulSet{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shared-name-memcached"}, theirDeploy)).To(Succeed())

		createMemcached(ctx, key, "  replicaCount: 3\n")
		Eventually(memcachedCondition(ctx, key, "ReleaseFailed"), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue),
			HaveField("Message", ContainSubstring("a Helm release named shared-name that this operator did not make"))))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement("ForeignRelease"))
		untouched(theirDeploy)
		live := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&theirRecord), live)).To(Succeed())
		Expect(live.ResourceVersion).To(Equal(theirRecord.ResourceVersion), "their release record is not written to")
		Expect(live.Labels).NotTo(HaveKey(oplabels.Record))

		By("deleting the Memcached, which removes nothing of theirs")
		deleteMemcached(ctx, key)
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&theirRecord), live)).To(Succeed())
		Expect(live.ResourceVersion).To(Equal(theirRecord.ResourceVersion))
		untouched(theirDeploy)
	})
})

var _ = Describe("The hooks before an upgrade", func() {
	It("take a StatefulSet as the release's by its controller's UID, not by Helm's annotations alone", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		key := types.NamespacedName{Namespace: ns, Name: "cache"}
		createMemcached(ctx, key, "  replicaCount: 1")
		mc := &cachev1.Memcached{}
		Expect(k8sClient.Get(ctx, key, mc)).To(Succeed())

		By("a tenant's StatefulSet with the release's labels and Helm's annotations, and no controller")
		selector := map[string]string{"app": "tenant"}
		forged := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forged",
			Labels:      map[string]string{oplabels.Name: oplabels.ChartName, oplabels.Instance: key.Name},
			Annotations: map[string]string{"meta.helm.sh/release-name": key.Name, "meta.helm.sh/release-namespace": ns}},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: selector},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: selector},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "memcached", Image: "tenant"}}}}}}
		Expect(k8sClient.Create(ctx, forged)).To(Succeed())
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forged-0", Labels: selector},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "memcached", Image: "tenant"}}}}
		Expect(k8sClient.Create(ctx, pod)).To(Succeed())

		By("an upgrade whose manifest names it, with a template change and a Service selecting the serving servers")
		manifest := func(tier string) string {
			return `---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: forged, namespace: ` + ns + `}
spec:
  replicas: 1
  selector: {matchLabels: {app: tenant}}
  template:
    metadata: {labels: {app: tenant, tier: ` + tier + `}}
    spec: {containers: [{name: memcached, image: tenant}]}
---
apiVersion: v1
kind: Service
metadata: {name: cache, namespace: ` + ns + `}
spec: {selector: {app: tenant, ` + oplabels.Serving + `: "true"}, ports: [{port: 11211}]}
`
		}
		Expect(controllers.BeforeUpgrade(ctx, k8sClient, mc, &helm.Rendered{Version: 1, Deployed: true, Manifest: manifest("a")},
			&helm.Rendered{Version: 2, Manifest: manifest("b")})).To(Succeed())

		By("leaving the tenant's objects as they are: no hold, no partition, no serving label")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(forged), forged)).To(Succeed())
		Expect(forged.Annotations).NotTo(HaveKey(oplabels.HoldToken))
		Expect(forged.Spec.UpdateStrategy.RollingUpdate).To(Or(BeNil(), HaveField("Partition", Or(BeNil(), HaveValue(BeZero())))))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		Expect(pod.Labels).NotTo(HaveKey(oplabels.Serving))
		mc = &cachev1.Memcached{}
		Expect(k8sClient.Get(ctx, key, mc)).To(Succeed())
		Expect(mc.Status.Rollout).To(Or(BeNil(), HaveField("Change", BeNil())), "no rollout planned for it")
	})
})
