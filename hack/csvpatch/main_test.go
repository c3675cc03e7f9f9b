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

package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestPatch(t *testing.T) {
	in := []byte(`apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  annotations:
    containerImage: old:v0
  name: memcached-operator.v0.1.0
spec:
  relatedImages:
  - image: old:v0
    name: memcached-operator
  - image: docker.io/library/memcached:1.6.38
    name: memcached
`)
	for i := 0; i < 2; i++ { // patching twice gives the same result
		out, err := patch(in, "quay.io/example/memcached-operator:v0.1.0", "2026-11-21T00:00:00Z")
		if err != nil {
			t.Fatal(err)
		}
		var csv struct {
			Metadata struct{ Annotations map[string]string }
			Spec     struct{ RelatedImages []map[string]string }
		}
		if err := yaml.Unmarshal(out, &csv); err != nil {
			t.Fatal(err)
		}
		if got := csv.Metadata.Annotations["containerImage"]; got != "quay.io/example/memcached-operator:v0.1.0" {
			t.Errorf("containerImage = %q", got)
		}
		if got := csv.Metadata.Annotations["createdAt"]; got != "2026-11-21T00:00:00Z" {
			t.Errorf("createdAt = %q", got)
		}
		want := []map[string]string{
			{"name": "memcached-operator", "image": "quay.io/example/memcached-operator:v0.1.0"},
			{"name": "memcached", "image": "docker.io/library/memcached:1.6.38"},
		}
		if !reflect.DeepEqual(csv.Spec.RelatedImages, want) {
			t.Errorf("relatedImages = %v, want %v", csv.Spec.RelatedImages, want)
		}
		in = out
	}
	if _, err := patch([]byte("kind: ConfigMap\n"), "x", "2026-11-21T00:00:00Z"); err == nil {
		t.Error("a document that is not a CSV must be refused")
	}
}

// com.redhat.openshift.versions follows minKubeVersion, in the metadata and the image labels alike,
// and writing it twice changes nothing.
func TestOpenShiftVersions(t *testing.T) {
	if v, err := openShiftVersions("1.30.0"); err != nil || v != "v4.17" {
		t.Errorf("openShiftVersions(1.30.0) = %q, %v; want v4.17", v, err)
	}
	if _, err := openShiftVersions("1.99.0"); err == nil {
		t.Error("an unknown Kubernetes version must fail, not guess")
	}
	dir := t.TempDir()
	csv := filepath.Join(dir, "csv.yaml")
	annotations := filepath.Join(dir, "annotations.yaml")
	dockerfile := filepath.Join(dir, "bundle.Dockerfile")
	for path, text := range map[string]string{
		csv:         "spec:\n  minKubeVersion: 1.28.0\n",
		annotations: "annotations:\n  operators.operatorframework.io.bundle.package.v1: memcached-operator\n",
		dockerfile:  "FROM scratch\nLABEL a=b\n\n# Copy files to locations specified by labels.\nCOPY bundle/manifests /manifests/\n",
	} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := writeOpenShiftVersions(csv, annotations, dockerfile); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := os.ReadFile(annotations)
	if strings.Count(string(a), "com.redhat.openshift.versions: v4.15\n") != 1 {
		t.Errorf("annotations.yaml:\n%s", a)
	}
	d, _ := os.ReadFile(dockerfile)
	if strings.Count(string(d), "LABEL com.redhat.openshift.versions=v4.15\n") != 1 ||
		strings.Index(string(d), "LABEL com.redhat.openshift.versions") > strings.Index(string(d), "# Copy files") {
		t.Errorf("bundle.Dockerfile:\n%s", d)
	}
}
