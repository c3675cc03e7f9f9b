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
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// The bundle pins the operator image by the digest of a local build: building the same files
// twice must give the same digest, and the image must be pushable by that digest alone.
func TestOperatorImageIsReproducibleAndPushedByDigest(t *testing.T) {
	repo := t.TempDir()
	for path, content := range map[string]string{
		"watches.yaml":                        "- group: cache.my.domain\n",
		"helm-charts/memcached/Chart.yaml":    "name: memcached\n",
		"helm-charts/memcached/values.yaml":   "replicaCount: 1\n",
		"helm-charts/memcached/templates/a.t": "{{ .Values.replicaCount }}\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, path), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	manager := filepath.Join(t.TempDir(), "manager")
	if err := os.WriteFile(manager, []byte("\x7fELF not really"), 0o700); err != nil {
		t.Fatal(err)
	}
	first, err := operatorImage(manager, repo)
	if err != nil {
		t.Fatal(err)
	}
	// Other file times and modes (another checkout): the same image.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(repo, "watches.yaml"), later, later); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(repo, "watches.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	second, err := operatorImage(manager, repo)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := first.Digest()
	d2, _ := second.Digest()
	if d1 != d2 {
		t.Fatalf("two builds of the same files: %s and %s", d1, d2)
	}

	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	digestFile := filepath.Join(t.TempDir(), "digest")
	c := &Cluster{StateDir: t.TempDir()}
	if err := c.deliver(first, host+"/example/memcached-operator:v9.9.9", delivery{byDigest: true, digestFile: digestFile}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(digestFile); strings.TrimSpace(string(got)) != d1.String() {
		t.Errorf("digest file %q, want %s", got, d1)
	}
	r, _ := name.NewRepository(host + "/example/memcached-operator")
	tags, err := remote.List(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(tags) != 0 {
		t.Errorf("pushed by digest, the repository has tags %v", tags)
	}
	if _, err := remote.Head(r.Digest(d1.String())); err != nil {
		t.Errorf("the image is not in the registry by its digest: %v", err)
	}
}
