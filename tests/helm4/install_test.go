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

package helm4

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	action3 "helm.sh/helm/v3/pkg/action"
	release3 "helm.sh/helm/v3/pkg/release"

	action4 "helm.sh/helm/v4/pkg/action"
	kube4 "helm.sh/helm/v4/pkg/kube"
	rcommon4 "helm.sh/helm/v4/pkg/release/common"
	release4 "helm.sh/helm/v4/pkg/release/v1"
)

// The chart's release on a real API server (envtest: no kubelet, so no waiting on pods), installed
// and upgraded by Helm 4's action package, as a Helm 4 operator will: a fresh install makes the
// same objects as Helm 3's, and a release Helm 3 made (every 1.x cache) is upgraded by Helm 4,
// moved to server-side apply, and upgraded by Helm 3 again (an operator rolled back).

var apiServer struct {
	kubeconfig string
	clients    *kubernetes.Clientset
	dynamic    *dynamic.DynamicClient
}

func TestMain(m *testing.M) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "tests/helm4: KUBEBUILDER_ASSETS must name the kube-apiserver and etcd binaries (make test-artifacts sets it)")
		os.Exit(1)
	}
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tests/helm4: start the API server:", err)
		os.Exit(1)
	}
	code := func() int {
		dir, err := os.MkdirTemp("", "helm4")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		apiServer.kubeconfig = filepath.Join(dir, "kubeconfig")
		if err := os.WriteFile(apiServer.kubeconfig, env.KubeConfig, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		apiServer.clients = kubernetes.NewForConfigOrDie(cfg)
		apiServer.dynamic = dynamic.NewForConfigOrDie(cfg)
		return m.Run()
	}()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "tests/helm4: stop the API server:", err)
		code = 1
	}
	os.Exit(code)
}

// newNamespace makes a namespace of the test's own and returns Helm's view of the API server in it.
func newNamespace(t *testing.T, name string) *genericclioptions.ConfigFlags {
	t.Helper()
	if _, err := apiServer.clients.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &apiServer.kubeconfig, &name
	return flags
}

func helm3(t *testing.T, flags *genericclioptions.ConfigFlags) *action3.Configuration {
	t.Helper()
	cfg := &action3.Configuration{}
	if err := cfg.Init(flags, *flags.Namespace, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func helm4(t *testing.T, flags *genericclioptions.ConfigFlags) *action4.Configuration {
	t.Helper()
	cfg := action4.NewConfiguration()
	if err := cfg.Init(flags, *flags.Namespace, "secret"); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func install3(t *testing.T, flags *genericclioptions.ConfigFlags, vals map[string]any) *release3.Release {
	t.Helper()
	chrt := chart3(t)
	install := action3.NewInstall(helm3(t, flags))
	install.ReleaseName, install.Namespace = releaseName, *flags.Namespace
	rel, err := install.Run(chrt, vals)
	if err != nil {
		t.Fatalf("Helm 3 install: %v", err)
	}
	return rel
}

func upgrade3(t *testing.T, flags *genericclioptions.ConfigFlags, vals map[string]any) *release3.Release {
	t.Helper()
	chrt := chart3(t)
	upgrade := action3.NewUpgrade(helm3(t, flags))
	upgrade.Namespace = *flags.Namespace
	rel, err := upgrade.Run(releaseName, chrt, vals)
	if err != nil {
		t.Fatalf("Helm 3 upgrade: %v", err)
	}
	return rel
}

func install4(t *testing.T, flags *genericclioptions.ConfigFlags, vals map[string]any) *release4.Release {
	t.Helper()
	chrt := chart4(t)
	install := action4.NewInstall(helm4(t, flags))
	install.ReleaseName, install.Namespace, install.WaitStrategy = releaseName, *flags.Namespace, kube4.HookOnlyStrategy
	r, err := install.Run(chrt, vals)
	if err != nil {
		t.Fatalf("Helm 4 install: %v", err)
	}
	return r.(*release4.Release)
}

// upgrade4 upgrades with Helm 4; serverSide is its ServerSideApply ("auto": as the release was).
func upgrade4(t *testing.T, flags *genericclioptions.ConfigFlags, serverSide string, vals map[string]any) *release4.Release {
	t.Helper()
	chrt := chart4(t)
	upgrade := action4.NewUpgrade(helm4(t, flags))
	upgrade.Namespace, upgrade.WaitStrategy, upgrade.ServerSideApply = *flags.Namespace, kube4.HookOnlyStrategy, serverSide
	r, err := upgrade.Run(releaseName, chrt, vals)
	if err != nil {
		t.Fatalf("Helm 4 upgrade (server-side apply %s): %v", serverSide, err)
	}
	return r.(*release4.Release)
}

// liveObjects are the release's objects as the API server holds them, by kind/name, without what
// differs between any two namespaces or writes (names of the namespace, identities, times,
// managers, status).
func liveObjects(t *testing.T, namespace, manifest string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for key, obj := range objects(t, manifest) {
		gv, err := schema.ParseGroupVersion(obj["apiVersion"].(string))
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: obj}
		mapping, err := resourceOf(gv.WithKind(u.GetKind()))
		if err != nil {
			t.Fatal(err)
		}
		live, err := apiServer.dynamic.Resource(mapping).Namespace(namespace).Get(context.Background(), u.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if ip, _, _ := unstructured.NestedString(live.Object, "spec", "clusterIP"); ip != "" && ip != "None" {
			unstructured.RemoveNestedField(live.Object, "spec", "clusterIP") // the API server's pick
			unstructured.RemoveNestedField(live.Object, "spec", "clusterIPs")
		}
		for _, f := range [][]string{{"metadata", "namespace"}, {"metadata", "uid"}, {"metadata", "resourceVersion"}, {"metadata", "generation"},
			{"metadata", "creationTimestamp"}, {"metadata", "managedFields"}, {"metadata", "annotations", "meta.helm.sh/release-namespace"}, {"status"}} {
			unstructured.RemoveNestedField(live.Object, f...)
		}
		// The namespace's name, where the chart writes it (the servers' DNS names): the same
		// in both namespaces.
		raw, err := json.Marshal(live.Object)
		if err != nil {
			t.Fatal(err)
		}
		var same map[string]any
		if err := json.Unmarshal(bytes.ReplaceAll(raw, []byte(namespace), []byte("NAMESPACE")), &same); err != nil {
			t.Fatal(err)
		}
		out[key] = same
	}
	return out
}

// resourceOf is the resource of the chart's kinds (the chart makes these only).
func resourceOf(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	resources := map[string]string{"ConfigMap": "configmaps", "Service": "services", "ServiceAccount": "serviceaccounts",
		"StatefulSet": "statefulsets", "PodDisruptionBudget": "poddisruptionbudgets", "NetworkPolicy": "networkpolicies"}
	r, ok := resources[gvk.Kind]
	if !ok {
		return schema.GroupVersionResource{}, fmt.Errorf("the chart made a %s, which this test does not know", gvk)
	}
	return gvk.GroupVersion().WithResource(r), nil
}

func statefulSet(t *testing.T, namespace string) *appsv1.StatefulSet {
	t.Helper()
	s, err := apiServer.clients.AppsV1().StatefulSets(namespace).Get(context.Background(), releaseName+"-memcached", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A fresh install by Helm 4 (server-side apply) makes the same objects, as the API server holds
// them, as Helm 3's (client-side), for each set of values the API server can take without CRDs.
func TestHelm4InstallsWhatHelm3Installs(t *testing.T) {
	for i, name := range []string{"defaults", "three servers", "warm restarts", "tls", "pods placed and labelled"} {
		t.Run(name, func(t *testing.T) {
			h3, h4 := newNamespace(t, fmt.Sprintf("install-%d-helm3", i)), newNamespace(t, fmt.Sprintf("install-%d-helm4", i))
			rel3 := install3(t, h3, valuesOf(t, valueSets[name]))
			rel4 := install4(t, h4, valuesOf(t, valueSets[name]))
			if rel4.Info.Status != rcommon4.StatusDeployed || rel4.ApplyMethod != string(release4.ApplyMethodServerSideApply) {
				t.Errorf("Helm 4's release is %s by %q, want deployed by server-side apply", rel4.Info.Status, rel4.ApplyMethod)
			}
			live3, live4 := liveObjects(t, *h3.Namespace, rel3.Manifest), liveObjects(t, *h4.Namespace, rel4.Manifest)
			if len(live3) < 4 {
				t.Fatalf("Helm 3 made %d objects", len(live3))
			}
			if diff := cmp.Diff(live3, live4); diff != "" {
				t.Errorf("live objects differ (-Helm 3 +Helm 4):\n%s", diff)
			}
		})
	}
}

// A cache's release as every 1.x operator made it (Helm 3, client-side apply) is upgraded by Helm 4
// as it was made (auto), then moved to server-side apply, and a value dropped on the way is gone
// from the objects each time; then Helm 3 upgrades Helm 4's release again.
func TestHelm4UpgradesAHelm3Release(t *testing.T) {
	flags := newNamespace(t, "upgrade")
	ns := *flags.Namespace
	install3(t, flags, valuesOf(t, "replicaCount: 2\npodAnnotations: {example.com/first: one}\npodLabels: {team: web}"))

	check := func(step string, replicas int32, annotation, gone, label string, labelKept bool) {
		t.Helper()
		s := statefulSet(t, ns)
		annotations, labels := s.Spec.Template.Annotations, s.Spec.Template.Labels
		if got := *s.Spec.Replicas; got != replicas {
			t.Errorf("%s: %d replicas, want %d", step, got, replicas)
		}
		if _, ok := annotations[annotation]; !ok {
			t.Errorf("%s: the pods' annotation %s is missing: %v", step, annotation, annotations)
		}
		if _, ok := annotations[gone]; ok {
			t.Errorf("%s: the pods' annotation %s, dropped from the values, is still there", step, gone)
		}
		if _, ok := labels[label]; ok != labelKept {
			t.Errorf("%s: the pods' label %s there: %v, want %v", step, label, ok, labelKept)
		}
	}

	rel := upgrade4(t, flags, "auto", valuesOf(t, "replicaCount: 3\npodAnnotations: {example.com/second: two}\npodLabels: {team: web}"))
	if rel.Version != 2 || rel.Info.Status != rcommon4.StatusDeployed || rel.ApplyMethod != string(release4.ApplyMethodClientSideApply) {
		t.Errorf("Helm 4's upgrade of a Helm 3 release: v%d %s by %q, want v2 deployed by client-side apply, as the release was", rel.Version, rel.Info.Status, rel.ApplyMethod)
	}
	check("Helm 4, as the release was", 3, "example.com/second", "example.com/first", "team", true)

	rel = upgrade4(t, flags, "true", valuesOf(t, "replicaCount: 1\npodAnnotations: {example.com/third: three}"))
	if rel.Version != 3 || rel.ApplyMethod != string(release4.ApplyMethodServerSideApply) {
		t.Errorf("Helm 4's move to server-side apply: v%d by %q", rel.Version, rel.ApplyMethod)
	}
	check("Helm 4, moved to server-side apply", 1, "example.com/third", "example.com/second", "team", false)

	back := upgrade3(t, flags, valuesOf(t, "replicaCount: 2\npodAnnotations: {example.com/fourth: four}\npodLabels: {team: db}"))
	if back.Version != 4 || back.Info.Status != release3.StatusDeployed {
		t.Errorf("Helm 3 after Helm 4: v%d %s", back.Version, back.Info.Status)
	}
	check("Helm 3 after Helm 4", 2, "example.com/fourth", "example.com/third", "team", true)
}
