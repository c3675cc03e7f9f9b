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

package bundle_test

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// OLM v1 installs into the CSV's suggested namespace (config/olmv1 is written from it); `make
// deploy` installs into config/default's. They are the same namespace, so that the docs, the
// metrics Service's name and the troubleshooting commands hold for every install.
func TestSuggestedNamespaceIsTheDeployNamespace(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "config", "default", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Namespace string `json:"namespace"`
	}
	if err := yaml.Unmarshal(raw, &k); err != nil {
		t.Fatal(err)
	}
	suggested := loadCSV(t).Annotations["operatorframework.io/suggested-namespace"]
	if suggested == "" || suggested != k.Namespace {
		t.Errorf("the CSV suggests namespace %q, config/default deploys into %q", suggested, k.Namespace)
	}
}
