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

// Package helm4 checks, before the operator moves to Helm 4 (docs/helm4.md), that the chart
// renders the same objects under Helm 4's engine as under Helm 3's, and that a release record
// Helm 3 stored is read by Helm 4's storage as it was written.
package helm4

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	action3 "helm.sh/helm/v3/pkg/action"
	chart3v2 "helm.sh/helm/v3/pkg/chart"
	loader3 "helm.sh/helm/v3/pkg/chart/loader"
	chartutil3 "helm.sh/helm/v3/pkg/chartutil"
	release3 "helm.sh/helm/v3/pkg/release"
	driver3 "helm.sh/helm/v3/pkg/storage/driver"

	action4 "helm.sh/helm/v4/pkg/action"
	common4 "helm.sh/helm/v4/pkg/chart/common"
	chart4v2 "helm.sh/helm/v4/pkg/chart/v2"
	loader4 "helm.sh/helm/v4/pkg/chart/v2/loader"
	rcommon4 "helm.sh/helm/v4/pkg/release/common"
	release4 "helm.sh/helm/v4/pkg/release/v1"
	driver4 "helm.sh/helm/v4/pkg/storage/driver"
)

const (
	releaseName = "cache"
	namespace   = "shop"
)

// kubeVersions are the oldest Kubernetes the bundle installs on (OKD 4.15) and the one the
// project tests on: the chart asks for the version in places (in-place resize).
var kubeVersions = []struct{ version, major, minor string }{{"v1.28.15", "1", "28"}, {"v1.35.4", "1", "35"}}

// apiVersions are the Prometheus Operator's, which the cluster serves in every case: the chart
// refuses a ServiceMonitor or PrometheusRule the cluster cannot take.
var apiVersions = []string{"monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule"}

// valueSets are the chart's values as the operator's translation makes them for the features a
// user turns on: each must render the same objects under both Helm majors.
var valueSets = map[string]string{
	"defaults": ``,
	"three servers": `replicaCount: 3
memcached: {maxMemoryMB: 256, maxConnections: 4096, threads: 8, maxItemSize: 2m, extraArgs: ["-o", "lru_crawler"]}
resources: {limits: {memory: 300Mi}, requests: {cpu: 100m}}`,
	"warm restarts": `replicaCount: 2
keepCacheAcross: Restarts
memcached: {maxMemoryMB: 64}`,
	"metrics and alerts": `metrics:
  enabled: true
  serviceMonitor: {enabled: true}
  prometheusRule: {enabled: true}`,
	"tls": `replicaCount: 2
tls: {enabled: true, clientAuth: Required}
metrics: {enabled: true}
operatorNamespace: memcached-operator-system`,
	"tls with the user's certificate": `tls: {enabled: true, certificateSecret: shop-cert}`,
	"pods placed and labelled": `podLabels: {team: web}
podAnnotations: {example.com/owner: web}
nodeSelector: {disk: ssd}
tolerations: [{key: dedicated, operator: Equal, value: cache, effect: NoSchedule}]
priorityClassName: high
imagePullSecrets: [{name: mirror}]
antiAffinity: hard`,
	"image by digest, no policy, no budget": `image: {repository: registry.example/memcached, digest: "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}
networkPolicy: {enabled: false}
podDisruptionBudget: {enabled: false}`,
	"autopilot": `autoscaling: {enabled: true}`,
}

func chartDir(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "helm-charts", "memcached")
}

// chart3 and chart4 are the chart as each Helm major loads it.
func chart3(t *testing.T) *chart3v2.Chart {
	t.Helper()
	chrt, err := loader3.Load(chartDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return chrt
}

func chart4(t *testing.T) *chart4v2.Chart {
	t.Helper()
	chrt, err := loader4.Load(chartDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return chrt
}

func valuesOf(t *testing.T, raw string) map[string]any {
	t.Helper()
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(raw), &vals); err != nil {
		t.Fatal(err)
	}
	return vals
}

// render3 is what Helm 3 renders for a release: its manifest and its notes.
func render3(t *testing.T, kube *chartutil3.KubeVersion, vals map[string]any) (string, string) {
	t.Helper()
	chrt := chart3(t)
	install := action3.NewInstall(&action3.Configuration{})
	install.DryRun, install.ClientOnly = true, true
	install.ReleaseName, install.Namespace, install.KubeVersion = releaseName, namespace, kube
	install.APIVersions = append(chartutil3.VersionSet{}, apiVersions...)
	rel, err := install.Run(chrt, vals)
	if err != nil {
		t.Fatalf("Helm 3: %v", err)
	}
	return rel.Manifest, rel.Info.Notes
}

// render4 is what Helm 4 renders for the same release.
func render4(t *testing.T, kube *common4.KubeVersion, vals map[string]any) (string, string) {
	t.Helper()
	chrt := chart4(t)
	install := action4.NewInstall(action4.NewConfiguration())
	install.DryRunStrategy = action4.DryRunClient
	install.ReleaseName, install.Namespace, install.KubeVersion = releaseName, namespace, kube
	install.APIVersions = append(common4.VersionSet{}, apiVersions...)
	r, err := install.Run(chrt, vals)
	if err != nil {
		t.Fatalf("Helm 4: %v", err)
	}
	rel, ok := r.(*release4.Release)
	if !ok {
		t.Fatalf("Helm 4 returned a %T", r)
	}
	return rel.Manifest, rel.Info.Notes
}

// objects are a manifest's documents as objects by kind/name; a document's "# Source:" comment and
// formatting are not objects.
func objects(t *testing.T, manifest string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, doc := range strings.Split(manifest, "\n---") {
		obj := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		if len(obj) == 0 {
			continue
		}
		meta, _ := obj["metadata"].(map[string]any)
		key := obj["kind"].(string) + "/" + meta["name"].(string)
		if _, dup := out[key]; dup {
			t.Fatalf("%s rendered twice", key)
		}
		out[key] = obj
	}
	return out
}

// The chart renders the same objects, and the same notes (the Deployed condition's message),
// under Helm 4 as under Helm 3, for each set of values on each Kubernetes version.
func TestChartRendersTheSameUnderHelm4(t *testing.T) {
	for _, kv := range kubeVersions {
		for name, raw := range valueSets {
			t.Run(kv.version+"/"+name, func(t *testing.T) {
				m3, notes3 := render3(t, &chartutil3.KubeVersion{Version: kv.version, Major: kv.major, Minor: kv.minor}, valuesOf(t, raw))
				m4, notes4 := render4(t, &common4.KubeVersion{Version: kv.version, Major: kv.major, Minor: kv.minor}, valuesOf(t, raw))
				o3, o4 := objects(t, m3), objects(t, m4)
				if len(o3) == 0 {
					t.Fatal("Helm 3 rendered no object")
				}
				if diff := cmp.Diff(o3, o4); diff != "" {
					t.Errorf("objects differ (-Helm 3 +Helm 4):\n%s", diff)
				}
				if notes3 != notes4 {
					t.Errorf("notes differ:\nHelm 3: %q\nHelm 4: %q", notes3, notes4)
				}
			})
		}
	}
}

// A release record that Helm 3 stored (a Secret of type helm.sh/release.v1) is read by Helm 4's
// storage as it was: the same manifest, values, status and revision; an upgrade of a 1.x cache by
// a Helm 4 operator starts from it. And the record Helm 4 then writes is read by Helm 3 (an
// operator rolled back).
func TestReleaseRecordsCrossTheMove(t *testing.T) {
	manifest, notes := render3(t, &chartutil3.KubeVersion{Version: "v1.35.4", Major: "1", Minor: "35"}, valuesOf(t, valueSets["tls"]))
	chrt := chart3(t)
	secrets := fake.NewSimpleClientset().CoreV1().Secrets(namespace)
	v3 := driver3.NewSecrets(secrets)
	written := &release3.Release{Name: releaseName, Namespace: namespace, Version: 1, Chart: chrt, Manifest: manifest,
		Config: valuesOf(t, valueSets["tls"]), Info: &release3.Info{Status: release3.StatusDeployed, Notes: notes}}
	key := "sh.helm.release.v1." + releaseName + ".v1"
	if err := v3.Create(key, written); err != nil {
		t.Fatal(err)
	}
	stored, err := secrets.Get(context.Background(), key, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Type != corev1.SecretType("helm.sh/release.v1") {
		t.Fatalf("Helm 3 stored a Secret of type %q", stored.Type)
	}

	v4 := driver4.NewSecrets(secrets)
	r, err := v4.Get(key)
	if err != nil {
		t.Fatalf("Helm 4 reads Helm 3's record: %v", err)
	}
	read, ok := r.(*release4.Release)
	if !ok {
		t.Fatalf("Helm 4 read a %T", r)
	}
	if read.Name != written.Name || read.Version != written.Version || read.Manifest != written.Manifest ||
		read.Info.Status != rcommon4.StatusDeployed || read.Info.Notes != notes || read.Chart.Metadata.Version != chrt.Metadata.Version {
		t.Errorf("Helm 4 read %s v%d %s (chart %s), want it as Helm 3 wrote it", read.Name, read.Version, read.Info.Status, read.Chart.Metadata.Version)
	}
	if diff := cmp.Diff(written.Config, read.Config); diff != "" {
		t.Errorf("values differ (-Helm 3 +Helm 4):\n%s", diff)
	}
	if read.ApplyMethod != "" {
		t.Errorf("a Helm 3 record reads with apply method %q, want none (client-side)", read.ApplyMethod)
	}

	next := *read
	next.Version = 2
	next.Info = &release4.Info{Status: rcommon4.StatusDeployed, Notes: notes}
	key2 := "sh.helm.release.v1." + releaseName + ".v2"
	if err := v4.Create(key2, &next); err != nil {
		t.Fatal(err)
	}
	back, err := v3.Get(key2)
	if err != nil {
		t.Fatalf("Helm 3 reads Helm 4's record: %v", err)
	}
	if back.Version != 2 || back.Manifest != manifest || back.Info.Status != release3.StatusDeployed {
		t.Errorf("Helm 3 read v%d %s, want Helm 4's record", back.Version, back.Info.Status)
	}
	if v3Records, err := v3.List(func(*release3.Release) bool { return true }); err != nil || len(v3Records) != 2 {
		t.Errorf("Helm 3 lists %d records (%v), want both", len(v3Records), err)
	}
}
