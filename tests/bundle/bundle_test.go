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

// Package bundle checks the generated OLM bundle against the OperatorHub community requirements
// that `operator-sdk bundle validate` does not cover.
package bundle_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blang/semver/v4"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/yaml"
)

var root = filepath.Join("..", "..")

func loadCSV(t *testing.T) *operatorsv1alpha1.ClusterServiceVersion {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "bundle", "manifests", "memcached-operator.clusterserviceversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	if err := yaml.UnmarshalStrict(raw, csv); err != nil {
		t.Fatal(err)
	}
	return csv
}

// Categories valid both in operator-framework/api and in the community operators' list.
var categories = []string{"AI/Machine Learning", "Application Runtime", "Big Data", "Cloud Provider", "Database",
	"Developer Tools", "Integration & Delivery", "Logging & Tracing", "Monitoring", "Networking", "OpenShift Optional",
	"Security", "Storage", "Streaming & Messaging"}

func TestCommunityRequirements(t *testing.T) {
	csv := loadCSV(t)
	a := csv.Annotations
	if !byDigest.MatchString(a["containerImage"]) {
		t.Errorf("containerImage %q is not host/org/name@sha256:<digest>", a["containerImage"])
	}
	if _, err := time.Parse(time.RFC3339, a["createdAt"]); err != nil {
		t.Errorf("createdAt %q is not an ISO 8601 time: %v", a["createdAt"], err)
	}
	for _, key := range []string{"support", "repository", "description", "capabilities", "categories"} {
		if a[key] == "" {
			t.Errorf("annotation %s is missing", key)
		}
	}
	if !slices.Contains(categories, a["categories"]) {
		t.Errorf("category %q is not in both category lists", a["categories"])
	}
	var examples []map[string]any
	if err := json.Unmarshal([]byte(a["alm-examples"]), &examples); err != nil || len(examples) != 2 {
		t.Errorf("alm-examples must hold one example per kind: %v (%v)", examples, err)
	}
	if n := len(csv.Spec.DisplayName); n < 3 || n > 50 {
		t.Errorf("displayName %q must have 3-50 characters", csv.Spec.DisplayName)
	}
	if len(csv.Spec.Description) < 20 {
		t.Error("description is too short")
	}
	if _, err := semver.Parse(csv.Spec.Version.String()); err != nil || csv.Name != "memcached-operator.v"+csv.Spec.Version.String() {
		t.Errorf("version %q / name %q: want semver and name memcached-operator.v<version>", csv.Spec.Version, csv.Name)
	}
	if len(csv.Spec.Maintainers) == 0 || csv.Spec.Provider.Name == "" || len(csv.Spec.Links) == 0 || len(csv.Spec.Keywords) == 0 {
		t.Error("maintainers, provider, links and keywords are required")
	}
	for _, f := range []string{"disconnected", "fips-compliant", "proxy-aware", "tls-profiles", "token-auth-aws", "token-auth-azure", "token-auth-gcp", "cnf", "cni", "csi"} {
		if v := a["features.operators.openshift.io/"+f]; v != "true" && v != "false" {
			t.Errorf("features.operators.openshift.io/%s = %q, want true or false", f, v)
		}
	}
	names := map[string]bool{}
	for _, r := range csv.Spec.RelatedImages {
		names[r.Name] = true
	}
	if !names["memcached-operator"] || !names["memcached"] {
		t.Errorf("relatedImages %v must list the operator and memcached", csv.Spec.RelatedImages)
	}
	modes := map[operatorsv1alpha1.InstallModeType]bool{}
	for _, m := range csv.Spec.InstallModes {
		modes[m.Type] = m.Supported
	}
	for _, m := range []operatorsv1alpha1.InstallModeType{"OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces"} {
		if !modes[m] {
			t.Errorf("install mode %s must be supported (WATCH_NAMESPACE takes any list)", m)
		}
	}
}

// byDigest matches an image reference pinned by digest: host/path[:tag]@sha256:<64 hex digits>.
var byDigest = regexp.MustCompile(`^[a-z0-9.-]+(:[0-9]+)?/[a-z0-9._/-]+(:[A-Za-z0-9._-]+)?@sha256:[a-f0-9]{64}$`)

// upstreamImages are the operand images published by others (memcached, its exporter), which
// the bundle names by tag: their published digests cannot be read on the machine that builds the
// bundle (no access to docker.io). docs/olm.md says how a disconnected install mirrors them.
var upstreamImages = []string{"docker.io/library/memcached", "docker.io/prom/memcached-exporter"}

func upstream(ref string) bool {
	for _, repo := range upstreamImages {
		if strings.HasPrefix(ref, repo+":") || strings.HasPrefix(ref, repo+"@") {
			return true
		}
	}
	return false
}

// The images this project builds are pinned by digest everywhere the bundle names them: the
// operator in the Deployment, containerImage and relatedImages, all the same reference.
func TestImagesByDigest(t *testing.T) {
	csv := loadCSV(t)
	operator := csv.Annotations["containerImage"]
	var deployment []string
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		for _, c := range d.Spec.Template.Spec.Containers {
			deployment = append(deployment, c.Image)
		}
	}
	if len(deployment) != 1 || deployment[0] != operator {
		t.Errorf("the Deployment's images %v, want only containerImage %s", deployment, operator)
	}
	for _, r := range csv.Spec.RelatedImages {
		switch {
		case r.Name == "memcached-operator" && r.Image != operator:
			t.Errorf("relatedImages names the operator %s, containerImage %s", r.Image, operator)
		case !byDigest.MatchString(r.Image) && !upstream(r.Image):
			t.Errorf("related image %s (%s) is not pinned by digest", r.Name, r.Image)
		}
	}
}

// The catalog names every bundle image by digest (the digest of the image bundle-build makes from
// that release's bundle.Dockerfile).
func TestCatalogBundlesByDigest(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "catalog", "memcached-operator", "index.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	bundles := 0
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var blob struct {
			Schema string `json:"schema"`
			Name   string `json:"name"`
			Image  string `json:"image"`
		}
		if err := yaml.Unmarshal([]byte(doc), &blob); err != nil {
			t.Fatal(err)
		}
		if blob.Schema != "olm.bundle" {
			continue
		}
		bundles++
		if !byDigest.MatchString(blob.Image) {
			t.Errorf("bundle %s: image %s is not pinned by digest", blob.Name, blob.Image)
		}
	}
	if bundles == 0 {
		t.Error("the catalog has no bundle")
	}
}

// The CSV's icon is docs/icon.svg, the project's one icon.
// The chart ships with the operator: a release sets both versions (make release).
func TestChartVersionIsTheReleaseVersion(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "helm-charts", "memcached", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		Version string `json:"version"`
	}
	if err := yaml.Unmarshal(raw, &chart); err != nil {
		t.Fatal(err)
	}
	if v := loadCSV(t).Spec.Version.String(); chart.Version != v {
		t.Errorf("chart version %s, CSV version %s: release with `make release VERSION=...`, which sets both", chart.Version, v)
	}
}

func TestIconIsTheProjectIcon(t *testing.T) {
	svg, err := os.ReadFile(filepath.Join(root, "docs", "icon.svg"))
	if err != nil {
		t.Fatal(err)
	}
	icons := loadCSV(t).Spec.Icon
	if len(icons) != 1 || icons[0].MediaType != "image/svg+xml" || icons[0].Data != base64.StdEncoding.EncodeToString(svg) {
		t.Error("the CSV icon must be docs/icon.svg (base64, image/svg+xml): update config/manifests/bases and run make bundle")
	}
}

// Every spec field of the examples has a spec descriptor (the scorecard checks this too).
func TestDescriptorsCoverExamples(t *testing.T) {
	csv := loadCSV(t)
	var examples []map[string]any
	if err := json.Unmarshal([]byte(csv.Annotations["alm-examples"]), &examples); err != nil {
		t.Fatal(err)
	}
	for _, ex := range examples {
		var owned *operatorsv1alpha1.CRDDescription
		for i, crd := range csv.Spec.CustomResourceDefinitions.Owned {
			if crd.Kind == ex["kind"] {
				owned = &csv.Spec.CustomResourceDefinitions.Owned[i]
			}
		}
		if owned == nil {
			t.Fatalf("no owned CRD for %v", ex["kind"])
		}
		spec, _ := ex["spec"].(map[string]any)
		for field := range spec {
			if !slices.ContainsFunc(owned.SpecDescriptors, func(d operatorsv1alpha1.SpecDescriptor) bool { return d.Path == field }) {
				t.Errorf("%s spec.%s has no spec descriptor", ex["kind"], field)
			}
		}
		if len(owned.Resources) == 0 || owned.DisplayName == "" || owned.Description == "" {
			t.Errorf("%s: owned CRD needs resources, displayName and description", ex["kind"])
		}
	}
}

// What an OKD catalog reads besides the community requirements: the platforms the operator
// supports, as labels (OperatorHub filters on them), and a maturity that matches the channel the
// package defaults to.
func TestCatalogMetadata(t *testing.T) {
	csv := loadCSV(t)
	// The operator image is an index of both (make image-build, hack/cluster's multiArch).
	for _, label := range []string{"operatorframework.io/arch.amd64", "operatorframework.io/arch.arm64", "operatorframework.io/os.linux"} {
		if csv.Labels[label] != "supported" {
			t.Errorf("label %s = %q, want supported", label, csv.Labels[label])
		}
	}
	raw, err := os.ReadFile(filepath.Join(root, "bundle", "metadata", "annotations.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Annotations map[string]string }
	if err := yaml.Unmarshal(raw, &meta); err != nil {
		t.Fatal(err)
	}
	if channel := meta.Annotations["operators.operatorframework.io.bundle.channel.default.v1"]; channel != "stable" || csv.Spec.Maturity != "stable" {
		t.Errorf("default channel %q, maturity %q: a release in the stable channel says it is stable", channel, csv.Spec.Maturity)
	}
}

// The catalog image is built on a pinned opm, the one that validated the catalog: an image
// built from catalog.Dockerfile today and next year serves the catalog the same way.
func TestCatalogDockerfilePinsOPM(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "catalog.Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^FROM (\S+)`).FindAllStringSubmatch(string(raw), -1) {
		if !regexp.MustCompile(`^quay\.io/operator-framework/opm:v\d+\.\d+\.\d+$`).MatchString(m[1]) {
			t.Errorf("catalog.Dockerfile: FROM %s, want quay.io/operator-framework/opm:v<version>", m[1])
		}
	}
}
