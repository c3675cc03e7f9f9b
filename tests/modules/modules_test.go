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

// The bench module builds the same Kubernetes client libraries as the operator: at the operator's
// versions, each package is compiled once for both (make test's build cache serves bench's vet,
// staticcheck and make chaos), not a second time on a fresh machine for a version apart.
func TestBenchRequiresTheOperatorsVersions(t *testing.T) {
	operator := requires(t, filepath.Join("..", "..", "go.mod"))
	bench := requires(t, filepath.Join("..", "..", "bench", "go.mod"))
	for path, version := range bench {
		if want, ok := operator[path]; ok && version != want {
			t.Errorf("bench/go.mod requires %s %s; go.mod requires %s: `cd bench && go get %s@%s && go mod tidy`", path, version, want, path, want)
		}
	}
}

// kube-router (hack/netpol) builds the same Kubernetes client libraries as the cluster tool
// (hack/cluster), which make test-e2e builds first: at the cluster tool's versions their packages
// come from its build cache.
func TestNetpolRequiresTheClusterToolsVersions(t *testing.T) {
	cluster := requires(t, filepath.Join("..", "..", "hack", "cluster", "go.mod"))
	netpol := requires(t, filepath.Join("..", "..", "hack", "netpol", "go.mod"))
	for path, version := range netpol {
		if want, ok := cluster[path]; ok && version != want {
			t.Errorf("hack/netpol/go.mod requires %s %s; hack/cluster/go.mod requires %s: `cd hack/netpol && go get %s@%s` (no tidy: the module has no packages)", path, version, want, path, want)
		}
	}
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
