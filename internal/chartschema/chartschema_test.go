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

package chartschema_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/example/memcached-operator/internal/chartschema"
)

var (
	root       = filepath.Join("..", "..")
	crdPath    = filepath.Join(root, "config", "crd", "bases", "cache.my.domain_memcacheds.yaml")
	chartDir   = filepath.Join(root, "helm-charts", "memcached")
	schemaPath = filepath.Join(chartDir, "values.schema.json")
)

func specSchema(t *testing.T) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	crd, err := os.ReadFile(crdPath)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := chartschema.SpecSchema(crd, "v1")
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// The chart's values.schema.json is exactly what the CRD's spec schema converts to.
func TestValuesSchemaMatchesCRD(t *testing.T) {
	want, err := chartschema.ValuesSchema(specSchema(t), "Values of the memcached chart (the spec of a cache.my.domain/v1 Memcached)")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s disagrees with the Memcached CRD: run `make manifests`", schemaPath)
	}
}

// Every default of the CRD equals the chart's values.yaml, so a CR without a field and a plain
// `helm install` get the same memcached.
func TestCRDDefaultsEqualValuesYAML(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	checked := 0
	var walk func(path []string, s *apiextensionsv1.JSONSchemaProps, vals any)
	walk = func(path []string, s *apiextensionsv1.JSONSchemaProps, vals any) {
		if s.Default != nil && s.Type != "object" {
			var want any
			if err := json.Unmarshal(s.Default.Raw, &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(normalize(want), normalize(vals)) {
				t.Errorf("default of spec.%s is %v in the CRD but %v in values.yaml", strings.Join(path, "."), want, vals)
			}
			checked++
		}
		m, _ := vals.(map[string]any)
		for name, p := range s.Properties {
			walk(append(append([]string(nil), path...), name), &p, m[name])
		}
	}
	walk(nil, specSchema(t), values)
	if checked < 10 {
		t.Fatalf("only %d defaults compared; the CRD lost its defaults?", checked)
	}
}

// normalize makes numbers comparable whether they came from JSON or YAML.
func normalize(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// The conversion drops Kubernetes extensions, refuses unknown fields and keeps int-or-string.
func TestValuesSchemaConversion(t *testing.T) {
	doc, err := chartschema.ValuesSchema(specSchema(t), "t")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(doc, []byte("x-kubernetes")) {
		t.Error("values.schema.json must not carry x-kubernetes-* extensions")
	}
	var s map[string]any
	if err := json.Unmarshal(doc, &s); err != nil {
		t.Fatal(err)
	}
	if s["additionalProperties"] != false {
		t.Error("unknown top-level values must be refused")
	}
	pdb := s["properties"].(map[string]any)["podDisruptionBudget"].(map[string]any)
	maxUnavailable := pdb["properties"].(map[string]any)["maxUnavailable"].(map[string]any)
	if got := len(maxUnavailable["anyOf"].([]any)); got != 2 {
		t.Errorf("maxUnavailable must accept an integer or a string, anyOf has %d entries", got)
	}
	if _, ok := s["properties"].(map[string]any)["proxy"]; ok {
		t.Error("the chart has no proxy values: memcached and its exporter make no outbound calls")
	}
	if _, ok := s["properties"].(map[string]any)["operatorNamespace"]; !ok {
		t.Error("the operator's values must be in the chart's schema")
	}
}
