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
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/example/memcached-operator/internal/operand"
)

// renderChart renders the memcached chart as the operator would install it, on a cluster that
// serves the given extra API versions.
func renderChart(t testing.TB, values map[string]any, apiVersions ...string) []*unstructured.Unstructured {
	t.Helper()
	chrt, err := loader.Load(filepath.Join(repoRoot(), "helm-charts", "memcached"))
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = "memcached-sample", chartNamespace
	install.KubeVersion = &chartutil.KubeVersion{Version: "v1.35.4", Major: "1", Minor: "35"}
	install.APIVersions = append(chartutil.VersionSet{}, apiVersions...)
	rel, err := install.Run(chrt, values)
	if err != nil {
		t.Fatalf("render chart: %v", err)
	}
	var objs []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(rel.Manifest), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

const chartNamespace = "default"

// The operator installs releases without Helm's client-side "OpenAPI validation", which on API
// servers with server-side field validation validates nothing (see actionclient.skipOpenAPIValidation).
// What it would have caught, the API server's strict field validation catches here: every object
// the chart renders, with every feature on, has no unknown or duplicate field.
var _ = Describe("The chart's objects", func() {
	It("pass the API server's strict field validation", func(ctx SpecContext) {
		objs := renderChart(GinkgoTB(), map[string]any{
			"replicaCount": 2,
			"metrics":      map[string]any{"enabled": true},
			"resources":    map[string]any{"limits": map[string]any{"memory": "128Mi"}},
		})
		Expect(objs).NotTo(BeEmpty())
		for _, o := range objs {
			o.SetNamespace(chartNamespace) // Helm sets it when it installs
			// k8sClient sends fieldValidation=Strict, as kubectl does.
			Expect(k8sClient.Create(ctx, o, client.DryRunAll)).To(Succeed(), "%s %s", o.GetKind(), o.GetName())
		}
	})
})

// Every kind the chart renders, with every feature on, is covered by the operator's ClusterRole
// with the verbs Helm needs; and the role has no wildcard.
func TestRoleCoversChart(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := sigsyaml.Unmarshal(raw, role); err != nil {
		t.Fatal(err)
	}
	for _, r := range role.Rules {
		for _, s := range slices.Concat(r.APIGroups, r.Resources, r.Verbs) {
			if s == "*" {
				t.Errorf("role rule %+v uses a wildcard", r)
			}
		}
	}

	objs := renderChart(t, map[string]any{
		"metrics": map[string]any{"enabled": true, "serviceMonitor": map[string]any{"enabled": true}},
	}, "monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor")
	kinds := map[string]bool{}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		kinds[gvk.Kind] = true
		resource, _ := meta.UnsafeGuessKindToResource(gvk)
		for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete"} {
			if !allows(role, gvk.Group, resource.Resource, verb) {
				t.Errorf("the chart renders %s but role.yaml does not allow %s on %s.%s", gvk.Kind, verb, resource.Resource, gvk.Group)
			}
		}
	}
	for _, want := range []string{"Deployment", "Service", "PodDisruptionBudget", "ServiceAccount", "ServiceMonitor"} {
		if !kinds[want] {
			t.Errorf("the chart with every feature on rendered no %s (rendered %v)", want, kinds)
		}
	}
}

func allows(role *rbacv1.ClusterRole, group, resource, verb string) bool {
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

// The chart and the Go controller secure memcached pods the same way, on both platforms.
func TestChartAndGoAgreeOnPodSecurity(t *testing.T) {
	for _, p := range []operand.Platform{{OpenShift: false}, {OpenShift: true}} {
		var extra []string
		if p.OpenShift {
			extra = []string{"security.openshift.io/v1"}
		}
		var deploy appsv1.Deployment
		for _, o := range renderChart(t, nil, extra...) {
			if o.GetKind() == "Deployment" {
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &deploy); err != nil {
					t.Fatal(err)
				}
			}
		}
		pod := deploy.Spec.Template.Spec
		if !equality.Semantic.DeepEqual(pod.SecurityContext, p.PodSecurityContext()) {
			t.Errorf("OpenShift=%v: chart pod securityContext %+v, Go %+v", p.OpenShift, pod.SecurityContext, p.PodSecurityContext())
		}
		if !equality.Semantic.DeepEqual(pod.Containers[0].SecurityContext, operand.ContainerSecurityContext()) {
			t.Errorf("OpenShift=%v: chart container securityContext %+v, Go %+v", p.OpenShift, pod.Containers[0].SecurityContext, operand.ContainerSecurityContext())
		}
		if p.OpenShift && pod.SecurityContext.RunAsUser != nil {
			t.Error("on OpenShift the restricted SCC assigns the UID; the chart must not fix one")
		}
	}
}

// The manager's RELATED_IMAGE_MEMCACHED (what OLM lists in relatedImages) is the chart's image.
func TestManagerRelatedImageIsChartImage(t *testing.T) {
	chrt, err := loader.Load(filepath.Join(repoRoot(), "helm-charts", "memcached"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := operand.ChartImage(chrt)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, doc := range strings.Split(string(raw), "\n---") {
		var deploy appsv1.Deployment
		if err := sigsyaml.Unmarshal([]byte(doc), &deploy); err != nil || deploy.Kind != "Deployment" {
			continue
		}
		for _, e := range deploy.Spec.Template.Spec.Containers[0].Env {
			if e.Name == operand.RelatedImageEnv {
				found = true
				if e.Value != want.String() {
					t.Errorf("config/manager/manager.yaml sets %s=%s, the chart pins %s", e.Name, e.Value, want)
				}
			}
		}
	}
	if !found {
		t.Errorf("config/manager/manager.yaml does not set %s", operand.RelatedImageEnv)
	}
}
