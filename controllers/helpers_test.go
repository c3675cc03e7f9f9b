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
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers"
	"github.com/example/memcached-operator/internal/helm/actionclient"
)

// Helpers shared by the envtest specs of this package.

// deployedCondition returns the Deployed condition the Helm reconciler wrote, if any.
func deployedCondition(ctx context.Context, key types.NamespacedName) func(g Gomega) cachev1.HelmCondition {
	return memcachedCondition(ctx, key, "Deployed")
}

// memcachedCondition reads one condition of a Memcached (empty when it has none of that type).
func memcachedCondition(ctx context.Context, key types.NamespacedName, typ string) func(g Gomega) cachev1.HelmCondition {
	return func(g Gomega) cachev1.HelmCondition {
		mc := &cachev1.Memcached{}
		g.Expect(k8sClient.Get(ctx, key, mc)).To(Succeed())
		for _, c := range mc.Status.Conditions {
			if c.Type == typ {
				return c
			}
		}
		return cachev1.HelmCondition{}
	}
}

func releaseSecrets(ctx context.Context, ns, release string) []string {
	secrets := &corev1.SecretList{}
	Expect(k8sClient.List(ctx, secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": release})).To(Succeed())
	var names []string
	for _, s := range secrets.Items {
		names = append(names, s.Name)
	}
	return names
}

// releaseStore reads and writes the release records of a Memcached as the operator does (sealed
// with its keys): what an operator killed in the middle of an operation leaves.
func releaseStore(ctx context.Context, key types.NamespacedName) *storage.Storage {
	mc := &cachev1.Memcached{}
	Expect(k8sClient.Get(ctx, key, mc)).To(Succeed())
	clientset, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	owner := metav1.NewControllerRef(mc, cachev1.GroupVersion.WithKind("Memcached"))
	return storage.Init(driver.NewSecrets(actionclient.SealedSecrets(clientset.CoreV1().Secrets(key.Namespace), key.Namespace, operatorSeal(ctx), *owner)))
}

// operatorSeal is the seal of the operator under test: its keys, from its namespace.
func operatorSeal(ctx context.Context) *actionclient.Seal {
	seal, err := actionclient.LoadSeal(ctx, k8sClient, operatorNamespace, actionclient.SealRingName)
	Expect(err).NotTo(HaveOccurred())
	return seal
}

// rawReleaseStore reads and writes the Helm release records of a namespace directly, as Helm (or
// a tenant who writes Secrets) does.
func rawReleaseStore(ns string) *storage.Storage {
	clientset, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	return storage.Init(driver.NewSecrets(clientset.CoreV1().Secrets(ns)))
}

// backupPod makes a pod as the Deployment's ReplicaSet would (envtest runs no controllers).
func backupPod(ctx context.Context, ns, backup, name string, ready bool) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
			"app.kubernetes.io/name": "memcached-backup", "app.kubernetes.io/instance": backup}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "memcached", Image: relatedImage}}},
	}
	Expect(k8sClient.Create(ctx, pod)).To(Succeed())
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}
	Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
	return pod
}

// serversOfRelease finds the StatefulSet of the Memcached key's release (the chart names it).
func serversOfRelease(ctx context.Context, key types.NamespacedName) (*appsv1.StatefulSet, error) {
	list := &appsv1.StatefulSetList{}
	if err := k8sClient.List(ctx, list, client.InNamespace(key.Namespace), client.MatchingLabels{"app.kubernetes.io/instance": key.Name}); err != nil {
		return nil, err
	}
	if len(list.Items) != 1 {
		return nil, fmt.Errorf("%d StatefulSets of release %s", len(list.Items), key.Name)
	}
	return &list.Items[0], nil
}

// setWaiting reports, as the kubelet would, the pod's container waiting for reason (e.g.
// ImagePullBackOff), or running when reason is "".
func setWaiting(ctx context.Context, pod *corev1.Pod, reason string) {
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		state := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
		if reason != "" {
			state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "the kubelet's words"}}
		}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "memcached", Image: pod.Spec.Containers[0].Image, State: state}}
		g.Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
	}, timeout, interval).Should(Succeed())
}

func backupStatus(ctx context.Context, key types.NamespacedName) func(g Gomega) cachev1.MemcachedBackupStatus {
	return func(g Gomega) cachev1.MemcachedBackupStatus {
		b := &cachev1.MemcachedBackup{}
		g.Expect(k8sClient.Get(ctx, key, b)).To(Succeed())
		return b.Status
	}
}

func conditionStatus(typ string, status metav1.ConditionStatus) OmegaMatcher {
	return WithTransform(func(st cachev1.MemcachedBackupStatus) metav1.ConditionStatus {
		if c := meta.FindStatusCondition(st.Conditions, typ); c != nil {
			return c.Status
		}
		return ""
	}, Equal(status))
}

// reconciles returns controller-runtime's count of finished reconciles of a controller.
func reconciles(controller string) float64 {
	families, err := crmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "controller") == controller {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// newNamespace makes a namespace for one test; envtest cannot delete namespaces (no
// namespace controller), so each test uses its own.
func newNamespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	specNamespaces = append(specNamespaces, ns.Name) // a failure's report says what they hold
	return ns.Name
}

// repoRoot is the folder of the operator's go.mod, whatever the working directory.
func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/example/memcached-operator\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			panic("no go.mod of github.com/example/memcached-operator above the working directory")
		}
		dir = parent
	}
}

// cr is a CR of kind written as a user's manifest writes it, from a YAML spec (typed Go structs
// cannot write fields the current API dropped or renamed, nor invalid values).
func cr(kind, ns, name, spec string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte("apiVersion: cache.my.domain/v1\nkind: "+kind+"\nspec:\n"+spec), &obj.Object)).To(Succeed())
	obj.SetName(name)
	obj.SetNamespace(ns)
	return obj
}

// eventReasons returns the reasons of the Events recorded on an object of kind.
func eventReasons(ctx context.Context, kind string, key types.NamespacedName) func(g Gomega) []string {
	return func(g Gomega) []string {
		events := &corev1.EventList{}
		g.Expect(k8sClient.List(ctx, events, client.InNamespace(key.Namespace))).To(Succeed())
		var reasons []string
		for _, e := range events.Items {
			if e.InvolvedObject.Name == key.Name && e.InvolvedObject.Kind == kind {
				reasons = append(reasons, e.Reason)
			}
		}
		return reasons
	}
}

// chartOfRelease loads the memcached chart of a released version from the commit releases.yaml
// records for it, as the operator of that version shipped it.
func chartOfRelease(version string) *chart.Chart {
	commit := releaseCommit(version)
	archive, err := exec.Command("git", "archive", "--format=tar", commit, "helm-charts/memcached").Output()
	Expect(err).NotTo(HaveOccurred(), "git archive %s: the tests need the repository's history", commit)
	dir := GinkgoT().TempDir()
	untar := exec.Command("tar", "-x", "-C", dir)
	untar.Stdin = bytes.NewReader(archive)
	Expect(untar.Run()).To(Succeed())
	chrt, err := loader.Load(filepath.Join(dir, "helm-charts", "memcached"))
	Expect(err).NotTo(HaveOccurred())
	return chrt
}

// releaseCommit is the commit releases.yaml records for a version.
func releaseCommit(version string) string {
	raw, err := os.ReadFile("releases.yaml")
	Expect(err).NotTo(HaveOccurred())
	var list struct {
		Releases []struct{ Version, Commit string }
	}
	Expect(yaml.Unmarshal(raw, &list)).To(Succeed())
	for _, r := range list.Releases {
		if r.Version == version {
			return r.Commit
		}
	}
	Fail("releases.yaml has no version " + version)
	return ""
}

// chartAsVersion is this tree's memcached chart under another version number.
func chartAsVersion(version string) *chart.Chart {
	chrt := operatorChart()
	chrt.Metadata.Version = version
	return chrt
}

// operatorChart is the operator's chart, as its image holds it.
func operatorChart() *chart.Chart {
	chrt, err := loader.Load(filepath.Join("helm-charts", "memcached"))
	Expect(err).NotTo(HaveOccurred())
	return chrt
}

// installRelease installs a chart with Helm itself, as an earlier operator version did.
func installRelease(ctx context.Context, ns, name string, chrt *chart.Chart, vals map[string]any) {
	install := action.NewInstall(helmItself(ctx, ns, name))
	install.ReleaseName, install.Namespace = name, ns
	_, err := install.Run(chrt, vals)
	Expect(err).NotTo(HaveOccurred())
}

// helmItself is Helm's action configuration for release name in ns, as the helm CLI has it: its
// own Secrets driver and kube client.
func helmItself(ctx context.Context, ns, name string) *action.Configuration {
	httpClient, err := rest.HTTPClientFor(cfg)
	Expect(err).NotTo(HaveOccurred())
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	Expect(err).NotTo(HaveOccurred())
	// Helm itself sets no owner on its release records (the CR does not exist yet).
	configs, err := helmclient.NewActionConfigGetter(cfg, mapper, helmclient.StorageDriverMapper(
		helmclient.DefaultSecretsStorageDriver(helmclient.SecretsStorageDriverOpts{DisableOwnerRefInjection: true})))
	Expect(err).NotTo(HaveOccurred())
	owner := &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	conf, err := configs.ActionConfigFor(ctx, owner)
	Expect(err).NotTo(HaveOccurred())
	return conf
}

// ownRecords makes a CR the controller of its release's records and objects, as the earlier
// operator versions' storage and post-renderer did (installRelease writes them as Helm itself
// does, before the CR exists), then does what this operator does when it starts after them: it
// judges the records of earlier versions by their manifests and seals them
// (actionclient.SealRecords; the operator under test started before these records were
// written, so they count as earlier up to now).
func ownRecords(ctx context.Context, key types.NamespacedName) {
	mc := &cachev1.Memcached{}
	Expect(k8sClient.Get(ctx, key, mc)).To(Succeed())
	secrets := &corev1.SecretList{}
	Expect(k8sClient.List(ctx, secrets, client.InNamespace(key.Namespace), client.MatchingLabels{"owner": "helm", "name": key.Name})).To(Succeed())
	Expect(secrets.Items).NotTo(BeEmpty())
	for i := range secrets.Items {
		s := &secrets.Items[i]
		Expect(controllerutil.SetControllerReference(mc, s, scheme)).To(Succeed())
		Expect(k8sClient.Update(ctx, s)).To(Succeed())
	}
	last, err := rawReleaseStore(key.Namespace).Last(key.Name)
	Expect(err).NotTo(HaveOccurred())
	for _, doc := range releaseutil.SplitManifests(last.Manifest) {
		obj := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
		if len(obj.Object) == 0 {
			continue
		}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: obj.GetName()}, obj)).To(Succeed())
			if obj.GetAnnotations()["meta.helm.sh/release-name"] != key.Name {
				return // not made for the release (a spec put someone else's object in its place)
			}
			g.Expect(controllerutil.SetControllerReference(mc, obj, scheme)).To(Succeed())
			g.Expect(k8sClient.Update(ctx, obj)).To(Succeed())
		}, timeout, interval).Should(Succeed())
	}
	startOperator(ctx, key.Namespace)
	// A new operator reconciles every CR when it starts; here a change of the CR's annotations
	// does, before a back-off from an attempt that met the records unsealed.
	Expect(k8sClient.Patch(ctx, &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}},
		client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{"test.memcached/started":"%d"}}}`, time.Now().UnixNano())))).To(Succeed())
}

// startOperator does, for the records of namespace ns, what the operator does when it starts:
// records written before then without its seal are judged by their manifests and sealed.
func startOperator(ctx context.Context, ns string) actionclient.SealedRecords {
	return startOperatorAt(ctx, ns, time.Now().Add(time.Second))
}

// startOperatorAt is startOperator for an operator that began sealing at since.
func startOperatorAt(ctx context.Context, ns string, since time.Time) actionclient.SealedRecords {
	chrt, err := loader.Load(filepath.Join("helm-charts", "memcached"))
	Expect(err).NotTo(HaveOccurred())
	fence, err := actionclient.NewFence(chrt, k8sClient.RESTMapper(), k8sClient, nil, controllers.RetiredChartKinds...)
	Expect(err).NotTo(HaveOccurred())
	done, err := actionclient.SealRecords(ctx, k8sClient, operatorSeal(ctx), fence,
		metav1.GroupVersionKind(cachev1.GroupVersion.WithKind("Memcached")), []string{ns}, since)
	Expect(err).NotTo(HaveOccurred())
	return done
}

// createMemcached creates a Memcached from a YAML spec, the way a user's manifest does (see cr).
func createMemcached(ctx context.Context, key types.NamespacedName, spec string) {
	Expect(k8sClient.Create(ctx, cr("Memcached", key.Namespace, key.Name, spec))).To(Succeed())
}

// deleteMemcached deletes a Memcached, if there is one, and waits until its uninstall is done and
// it is gone.
func deleteMemcached(ctx context.Context, key types.NamespacedName) {
	mc := &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}
	Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, mc))).To(Succeed())
	Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, key, mc)) }, timeout, interval).Should(BeTrue())
}

// setRollout writes the status of the StatefulSet key (a Memcached's servers) as its controller
// would (envtest runs none).
func setRollout(ctx context.Context, key types.NamespacedName, replicas, updated, available int32) {
	Eventually(func(g Gomega) {
		s := &appsv1.StatefulSet{}
		g.Expect(k8sClient.Get(ctx, key, s)).To(Succeed())
		s.Status = appsv1.StatefulSetStatus{
			ObservedGeneration: s.Generation, Replicas: replicas, UpdatedReplicas: updated,
			ReadyReplicas: available, AvailableReplicas: available,
		}
		g.Expect(k8sClient.Status().Update(ctx, s)).To(Succeed())
	}, timeout, interval).Should(Succeed())
}

func memcachedStatus(ctx context.Context, key types.NamespacedName) func(g Gomega) cachev1.MemcachedStatus {
	return func(g Gomega) cachev1.MemcachedStatus {
		mc := &cachev1.Memcached{}
		g.Expect(k8sClient.Get(ctx, key, mc)).To(Succeed())
		return mc.Status
	}
}

// withSpec is the CR of kind at key as it is now, with its spec replaced by spec (as cr takes it),
// ready for an Update.
func withSpec(ctx context.Context, kind string, key types.NamespacedName, spec string) *unstructured.Unstructured {
	live := &unstructured.Unstructured{}
	live.SetAPIVersion("cache.my.domain/v1")
	live.SetKind(kind)
	Expect(k8sClient.Get(ctx, key, live)).To(Succeed())
	live.Object["spec"] = cr(kind, key.Namespace, key.Name, spec).Object["spec"]
	return live
}

// skipBelowKubernetes skips a spec on an API server older than 1.minor (make test also runs the
// suite on the oldest supported Kubernetes), saying which capability that version lacks.
func skipBelowKubernetes(minor int, lacks string) {
	if v := serverVersion(); !v.AtLeast(version.MajorMinor(1, uint(minor))) {
		Skip(fmt.Sprintf("Kubernetes %s lacks %s (1.%d+)", v, lacks, minor))
	}
}

// kubernetesAtLeast says whether the test API server is 1.<minor> or later.
func kubernetesAtLeast(minor int) bool {
	return serverVersion().AtLeast(version.MajorMinor(1, uint(minor)))
}

func serverVersion() *version.Version {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	info, err := dc.ServerVersion()
	Expect(err).NotTo(HaveOccurred())
	v, err := version.ParseGeneric(info.GitVersion)
	Expect(err).NotTo(HaveOccurred())
	return v
}
