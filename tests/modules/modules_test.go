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

// Package modules checks the project's Go modules against each other.
package modules

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/modfile"
)

// requires reads the modules a go.mod requires, by path.
func requires(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := modfile.Parse(path, raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]string{}
	for _, r := range mod.Require {
		versions[r.Mod.Path] = r.Mod.Version
	}
	return versions
}

// agrees fails for each module that other (a go.mod below the repository) requires at another
// version than base does; fix says how to align it.
func agrees(t *testing.T, base, other, fix string) {
	t.Helper()
	want := requires(t, filepath.Join("..", "..", base))
	for path, version := range requires(t, filepath.Join("..", "..", other)) {
		if w, ok := want[path]; ok && version != w {
			t.Errorf("%s requires %s %s; %s requires %s: `cd %s && go get %s@%s%s`", other, path, version, base, w, filepath.Dir(other), path, w, fix)
		}
	}
}

// The bench module builds the same Kubernetes client libraries as the operator: at the operator's
// versions, each package is compiled once for both (make test's build cache serves bench's vet,
// staticcheck and make chaos), not a second time on a fresh machine for a version apart.
func TestBenchRequiresTheOperatorsVersions(t *testing.T) {
	agrees(t, "go.mod", "bench/go.mod", " && go mod tidy")
}

// The local cluster's storage provisioner (hack/storage) is built as the manager is, at the
// operator's versions, so make test's build cache serves its Kubernetes libraries.
func TestStorageRequiresTheOperatorsVersions(t *testing.T) {
	agrees(t, "go.mod", "hack/storage/go.mod", " && go mod tidy")
}

// kube-router (hack/netpol) builds the same Kubernetes client libraries as the cluster tool
// (hack/cluster), which make test-e2e builds first: at the cluster tool's versions their packages
// come from its build cache.
func TestNetpolRequiresTheClusterToolsVersions(t *testing.T) {
	agrees(t, "hack/cluster/go.mod", "hack/netpol/go.mod", " (no tidy: the module has no packages)")
}

// tests/helm4 compares the chart under Helm 4 with the Helm 3 the operator runs: at the operator's
// Helm 3, and at its Kubernetes libraries, which each package then compiles once for both.
func TestHelm4ModuleComparesTheOperatorsHelm3(t *testing.T) {
	operator := requires(t, filepath.Join("..", "..", "go.mod"))
	helm4 := requires(t, filepath.Join("..", "helm4", "go.mod"))
	for _, path := range []string{"helm.sh/helm/v3", "k8s.io/api", "k8s.io/apimachinery", "k8s.io/client-go"} {
		if helm4[path] != operator[path] {
			t.Errorf("tests/helm4/go.mod requires %s %s; go.mod requires %s: `cd tests/helm4 && go get %s@%s && go mod tidy`", path, helm4[path], operator[path], path, operator[path])
		}
	}
}
