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

// Package crd tests the CRDs as clusters read them, beyond one API server's envtest.
package crd

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"
)

// oldestKubernetes is the oldest Kubernetes the bundle installs on (the CSV's minKubeVersion,
// OKD 4.15). An API server compiles the CEL rules of a CRD it is given with the libraries of the
// version before its own (environment.DefaultCompatibilityVersion), so the rules may only use what
// 1.27 had: no quantity(), no optional types. (make test also installs the CRDs on that
// kube-apiserver, which checks their estimated cost too.)
var oldestKubernetes = version.MajorMinor(1, 28)

// Every CEL rule of the CRDs compiles as the oldest supported API server compiles a new rule,
// with its API server code: a rule using a later library would make the CRD fail to install there.
func TestCELRulesCompileOnTheOldestKubernetes(t *testing.T) {
	envSet := environment.MustBaseEnvSet(version.MajorMinor(oldestKubernetes.Major(), oldestKubernetes.Minor()-1))
	for _, file := range []string{"cache.my.domain_memcacheds.yaml", "cache.my.domain_memcachedbackups.yaml"} {
		crd := readCRD(t, filepath.Join("..", "..", "config", "crd", "bases", file))
		for _, v := range crd.Spec.Versions {
			internal := &apiextensions.JSONSchemaProps{}
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
				t.Fatal(err)
			}
			s, err := schema.NewStructural(internal)
			if err != nil {
				t.Fatal(err)
			}
			rules := 0
			walk(s, true, "", func(node *schema.Structural, root bool, path string) {
				results, err := cel.Compile(node, model.SchemaDeclType(node, root), celconfig.PerCallLimit, envSet, cel.NewExpressionsEnvLoader())
				if err != nil {
					t.Errorf("%s %s%s: %v", file, v.Name, path, err)
				}
				for i, r := range results {
					rules++
					if r.Error != nil {
						t.Errorf("%s %s%s rule %d (%q) does not compile on Kubernetes %s: %v", file, v.Name, path, i, node.XValidations[i].Rule, oldestKubernetes, r.Error)
					}
				}
			})
			if file == "cache.my.domain_memcacheds.yaml" && rules < 20 {
				t.Errorf("%s: found %d CEL rules; the walk misses some", file, rules)
			}
		}
	}
}

// walk calls f for every node of a structural schema.
func walk(s *schema.Structural, root bool, path string, f func(*schema.Structural, bool, string)) {
	if s == nil {
		return
	}
	f(s, root, path)
	for name, p := range s.Properties {
		walk(&p, false, path+"."+name, f)
	}
	if s.Items != nil {
		walk(s.Items, false, path+"[*]", f)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
		walk(s.AdditionalProperties.Structural, false, path+"[*]", f)
	}
}

func readCRD(t *testing.T, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(raw, crd); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return crd
}
