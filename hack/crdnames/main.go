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

// Command crdnames writes the name rules of api/v1 (names.go) into the CRDs that controller-gen
// generated, as metadata.name constraints, which controller-gen has no marker for:
//
//	go run ./hack/crdnames -dir config/crd/bases
//
// A metadata.name schema, unlike a CEL rule on the root, is ratcheted by the API server on updates
// (the name never changes), so a CR made before the rule stays deletable; and OLM v1's CRD
// upgrade-safety check sees a new field, not a changed one.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

func main() {
	dir := flag.String("dir", "config/crd/bases", "folder of the generated CRDs")
	flag.Parse()
	rules := map[string]struct {
		max     int
		pattern string
	}{
		"cache.my.domain_memcacheds.yaml":       {cachev1.MemcachedNameMaxLength, cachev1.MemcachedNamePattern},
		"cache.my.domain_memcachedbackups.yaml": {cachev1.MemcachedBackupNameMaxLength, cachev1.MemcachedBackupNamePattern},
	}
	for file, r := range rules {
		if err := patch(filepath.Join(*dir, file), r.max, r.pattern); err != nil {
			fmt.Fprintln(os.Stderr, "crdnames:", err)
			os.Exit(1)
		}
	}
}

func patch(path string, max int, pattern string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd map[string]any
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	versions, _ := dig(crd, "spec", "versions").([]any)
	if len(versions) == 0 {
		return fmt.Errorf("%s: no versions", path)
	}
	for _, v := range versions {
		props, ok := dig(v, "schema", "openAPIV3Schema", "properties").(map[string]any)
		if !ok {
			return fmt.Errorf("%s: a version without schema properties", path)
		}
		props["metadata"] = map[string]any{
			"type": "object",
			"properties": map[string]any{
				"name": map[string]any{"type": "string", "maxLength": max, "pattern": pattern},
			},
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(append([]byte("---\n"), bytes.TrimSpace(out)...), '\n'), 0o644)
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
