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

// Package sbom checks the SBOMs that make sbom writes of the operator image (syft, SPDX JSON):
// each lists every Go module compiled into that image's manager, at the version go.mod requires.
package sbom

import (
	"debug/buildinfo"
	"os"
	"path/filepath"
	"testing"

	spdxjson "github.com/spdx/tools-golang/json"
	"golang.org/x/mod/modfile"
)

func TestOperatorSBOMListsTheManagersModules(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	images := os.Getenv("IMAGES_DIR")
	if images == "" {
		images = filepath.Join(root, "bin", "images")
	}
	raw, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := modfile.Parse("go.mod", raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	required := map[string]string{}
	for _, r := range mod.Require {
		required[r.Mod.Path] = r.Mod.Version
	}
	for _, p := range []struct{ arch, manager string }{{"amd64", "manager"}, {"arm64", "manager-arm64"}} {
		t.Run(p.arch, func(t *testing.T) {
			info, err := buildinfo.ReadFile(filepath.Join(images, p.manager))
			if err != nil {
				t.Fatalf("the %s manager of make image-build: %v", p.arch, err)
			}
			f, err := os.Open(filepath.Join(images, "operator.linux-"+p.arch+".spdx.json"))
			if err != nil {
				t.Fatalf("the SBOM of make sbom: %v", err)
			}
			defer f.Close()
			doc, err := spdxjson.Read(f)
			if err != nil {
				t.Fatal(err)
			}
			listed := map[string]string{}
			for _, pkg := range doc.Packages {
				listed[pkg.PackageName] = pkg.PackageVersion
			}
			if len(info.Deps) < 50 {
				t.Fatalf("the manager has only %d modules: not the operator's", len(info.Deps))
			}
			for _, dep := range info.Deps {
				m := dep
				if dep.Replace != nil {
					m = dep.Replace
				}
				if got, ok := listed[m.Path]; !ok || got != m.Version {
					t.Errorf("module %s %s of the manager: the SBOM lists %q", m.Path, m.Version, got)
				}
				if want, ok := required[dep.Path]; !ok || want != dep.Version {
					t.Errorf("module %s %s of the manager: go.mod requires %q", dep.Path, dep.Version, want)
				}
			}
		})
	}
}
