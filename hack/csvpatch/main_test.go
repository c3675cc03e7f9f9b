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
	"reflect"
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
