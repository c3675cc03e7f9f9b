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

package actionclient

import (
	"bytes"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/kube"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// offlineKubeClient is a Helm kube client that builds objects without a cluster: the kinds the
// chart renders, and a cluster-scoped one.
func offlineKubeClient(t *testing.T) (*kube.Client, meta.RESTMapper) {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, k := range []struct {
		gvk   schema.GroupVersionKind
		scope meta.RESTScope
	}{
		{schema.GroupVersionKind{Group: "cache.my.domain", Version: "v1", Kind: "Memcached"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "Service"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, meta.RESTScopeRoot},
	} {
		mapper.Add(k.gvk, k.scope)
	}
	config := clientcmdapi.Config{Clusters: map[string]*clientcmdapi.Cluster{"c": {Server: "https://127.0.0.1:1"}},
		Contexts: map[string]*clientcmdapi.Context{"c": {Cluster: "c"}}, CurrentContext: "c"}
	getter := genericclioptions.NewTestConfigFlags().WithRESTMapper(mapper).
		WithClientConfig(clientcmd.NewDefaultClientConfig(config, &clientcmd.ConfigOverrides{})).WithNamespace("ns")
	kc := kube.New(getter)
	kc.Namespace = "ns"
	return kc, mapper
}

// memcachedChart is the operator's chart, as its image holds it.
func memcachedChart(t *testing.T) *chart.Chart {
	t.Helper()
	chrt, err := loader.Load(filepath.Join("..", "..", "..", "helm-charts", "memcached"))
	if err != nil {
		t.Fatal(err)
	}
	return chrt
}

// chartManifests renders the memcached chart as Helm's install does before post-rendering, with
// each set of values.
func chartManifests(t *testing.T, valueSets ...map[string]any) []string {
	t.Helper()
	chrt := memcachedChart(t)
	caps := chartutil.DefaultCapabilities.Copy()
	caps.APIVersions = append(caps.APIVersions, "monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule")
	var out []string
	for _, vals := range valueSets {
		rv, err := chartutil.ToRenderValues(chrt, vals, chartutil.ReleaseOptions{Name: "m", Namespace: "ns", IsInstall: true}, caps)
		if err != nil {
			t.Fatal(err)
		}
		files, err := engine.Render(chrt, rv)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, name := range slices.Sorted(maps.Keys(files)) {
			if strings.HasSuffix(name, ".yaml") && strings.TrimSpace(files[name]) != "" {
				b.WriteString("---\n# Source: " + name + "\n" + files[name] + "\n")
			}
		}
		out = append(out, b.String())
	}
	return out
}

// The owner renderer writes what the library's post-renderer writes, byte for byte (the manifest
// is what a release records and what the next reconcile compares with), and the next Build of
// that manifest gets the objects a parse of it gives.
func TestOwnerRendererWritesWhatTheLibrarysWrites(t *testing.T) {
	kc, mapper := offlineKubeClient(t)
	owner := &unstructured.Unstructured{}
	owner.SetGroupVersionKind(schema.GroupVersionKind{Group: "cache.my.domain", Version: "v1", Kind: "Memcached"})
	owner.SetNamespace("ns")
	owner.SetName("m")
	owner.SetUID("cr-unit")

	manifests := chartManifests(t,
		map[string]any{},
		map[string]any{"replicaCount": 3, "keepCacheAcross": "Restarts", "persistence": map[string]any{"enabled": true},
			"tls": map[string]any{"enabled": true}, "podAnnotations": map[string]any{"a": "b: c"},
			"resources": map[string]any{"limits": map[string]any{"cpu": "500m", "memory": "64Mi"}},
			"metrics":   map[string]any{"enabled": true, "serviceMonitor": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true}}},
	)
	// What the chart does not render, for the library's other cases: an object that cannot have
	// the CR as its owner (cluster-scoped, in another namespace), one the chart keeps on
	// uninstall, one with an owner already.
	manifests = append(manifests, `---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: cluster-wide
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: elsewhere
  namespace: other
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: kept
  annotations:
    helm.sh/resource-policy: keep
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: owned
  ownerReferences:
  - apiVersion: v1
    kind: ConfigMap
    name: parent
    uid: parent-uid
data:
  n: "1"
`)
	for i, manifest := range manifests {
		want, err := libraryPostRenderer(mapper, kc, owner).Run(bytes.NewBufferString(manifest))
		if err != nil {
			t.Fatal(err)
		}
		ours := kubeClient{Client: kc, built: &builtManifest{}}
		got, err := ownerRenderer{mapper: mapper, kc: ours, owner: owner}.Run(bytes.NewBufferString(manifest))
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("manifest %d: the owner renderer wrote\n%s\nthe library's\n%s", i, got, want)
		}

		kept := ours.built.infos
		built, err := ours.Build(bytes.NewBufferString(got.String()), false)
		if err != nil {
			t.Fatal(err)
		}
		if len(built) == 0 || &built[0] != &kept[0] {
			t.Fatalf("manifest %d: Build parsed the manifest the renderer had parsed", i)
		}
		parsed, err := ours.Build(bytes.NewBufferString(got.String()), false)
		if err != nil {
			t.Fatal(err)
		}
		if &parsed[0] == &kept[0] {
			t.Fatalf("manifest %d: the kept objects were given twice", i)
		}
		if len(parsed) != len(built) {
			t.Fatalf("manifest %d: %d objects kept, %d parsed", i, len(built), len(parsed))
		}
		for j := range parsed {
			b, p := built[j], parsed[j]
			if b.Name != p.Name || b.Namespace != p.Namespace || b.Mapping.Resource != p.Mapping.Resource ||
				!equality.Semantic.DeepEqual(b.Object.(*unstructured.Unstructured).Object, p.Object.(*unstructured.Unstructured).Object) {
				t.Errorf("manifest %d, object %d (%s %s): kept\n%v\nparsed\n%v", i, j, p.Mapping.Resource, p.Name, b.Object, p.Object)
			}
		}
	}
}
