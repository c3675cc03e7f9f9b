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
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/random"
)

// Pushing an index whose images upload large layers at once, as the multi-arch images do, ends:
// over one HTTP/2 connection the registry's upload handler, which reads a body while holding the
// registry's lock, stalled the other uploads' streams until the connection's flow-control window
// was full, and the push hung (seen in make test-e2e).
func TestRegistryTakesConcurrentUploads(t *testing.T) {
	dir := t.TempDir()
	c := &Cluster{StateDir: dir}
	pki := c.path("pki")
	if err := os.MkdirAll(pki, 0o755); err != nil {
		t.Fatal(err)
	}
	ca, err := ensureCA(pki, "ca")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ensureCert(pki, ca, certSpec{name: "registry", cn: "registry", ips: []string{"127.0.0.1"}, server: true})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	go func() { t.Log(serveRegistry(addr, cert.CertFile, cert.KeyFile, filepath.Join(dir, "registry"))) }()
	waitListening(t, addr)

	index, err := random.Index(8<<20, 2, 4) // 4 images of 2 layers of 8 MiB
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.push(index, fmt.Sprintf("%s/concurrent:test", addr)) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the push hangs")
	}
}

func waitListening(t *testing.T, addr string) {
	t.Helper()
	for range 100 {
		if resp, err := http.Get("http://" + addr); err == nil { // a TLS server answers plain HTTP with 400
			resp.Body.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the registry does not listen on %s", addr)
}
