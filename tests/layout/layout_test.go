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

// Package layout checks the shape of the operator's code that review keeps: one concern per file.
package layout

import (
	"bytes"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxLines is the most a source file of the operator may hold (tests and generated code aside):
// past it, a file holds more than one concern. (The API types in api/ are one concern with their
// documentation, as kubebuilder lays them out.)
const maxLines = 500

func TestNoSourceFileHoldsSeveralConcerns(t *testing.T) {
	for _, dir := range []string{"controllers", "internal"} {
		root := filepath.Join("..", "..", dir)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") ||
				strings.HasSuffix(path, "_test.go") || strings.HasPrefix(d.Name(), "zz_generated") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if n := bytes.Count(b, []byte("\n")); n > maxLines {
				t.Errorf("%s has %d lines (at most %d): split it by concern", strings.TrimPrefix(path, "../../"), n, maxLines)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Helm's and the library's types stay inside internal/helm (docs/development.md, the engine): a
// move to another Helm touches that package alone.
func TestHelmStaysInsideInternalHelm(t *testing.T) {
	for _, dir := range []string{"controllers", "internal", "api"} {
		root := filepath.Join("..", "..", dir)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && filepath.ToSlash(path) == "../../internal/helm" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, imp := range []string{`"helm.sh/helm/`, `"github.com/operator-framework/helm-operator-plugins/`} {
				if bytes.Contains(b, []byte(imp)) {
					t.Errorf("%s imports %s...: take it through internal/helm", strings.TrimPrefix(path, "../../"), strings.Trim(imp, `"`))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(`"helm.sh/helm/`)) || bytes.Contains(b, []byte(`"github.com/operator-framework/helm-operator-plugins/`)) {
		t.Error("main.go imports Helm or the library: take it through internal/helm")
	}
}

// controllers/ is split by concern (docs/development.md, "Layout"): a reconciler's package
// (controllers/<name>) imports only what the controllers share (controllers/internal/...), never
// a sibling reconciler's package, and a shared package imports no reconciler's. So a change of one
// reconciler compiles alone, and what two share has a home of its own, not a catch-all.
func TestControllersImportNoSiblingReconciler(t *testing.T) {
	const module = "github.com/example/memcached-operator/controllers/"
	root := filepath.Join("..", "..", "controllers")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if name := d.Name(); name == "common" || name == "util" || name == "utils" || name == "helpers" {
				t.Errorf("controllers/%s: a catch-all package; give what it holds a package named for its concern", filepath.ToSlash(rel))
			}
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		if dir == "." || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil // controllers/ itself wires them all
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		own := strings.SplitN(dir, "/", 2)[0] // a reconciler's package, or "internal"
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if !strings.HasPrefix(p, module) {
				continue
			}
			if other := strings.SplitN(strings.TrimPrefix(p, module), "/", 2)[0]; other != "internal" && other != own {
				t.Errorf("controllers/%s imports %s: a reconciler's package is no one else's to import; move what both need to controllers/internal", filepath.ToSlash(rel), p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
