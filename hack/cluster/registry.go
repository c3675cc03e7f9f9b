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
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// serveRegistry runs the local image registry over TLS (the cluster's CA signs its certificate;
// containerd and the host tools trust that CA). Blobs are kept on disk, manifests in memory. It
// serves OCI 1.1's referrers API, which lists the SBOMs attached to an image.
func serveRegistry(addrs, certFile, keyFile, dir string) error {
	if err := mkdirs(dir); err != nil {
		return err
	}
	handler := registry.New(
		registry.WithBlobHandler(registry.NewDiskBlobHandler(dir)),
		registry.WithReferrersSupport(true),
		registry.Logger(log.New(os.Stderr, "registry: ", log.LstdFlags)),
	)
	errs := make(chan error)
	for _, addr := range strings.Split(addrs, ",") {
		// HTTP/1.1 only: the registry's upload handler reads a body while it holds the registry's
		// lock, so over one HTTP/2 connection the other uploads' unread streams filled its
		// flow-control window and a push of several large layers at once hung. Over HTTP/1.1
		// each upload has its own connection.
		srv := &http.Server{Addr: addr, Handler: handler, ReadHeaderTimeout: 30 * time.Second, Protocols: new(http.Protocols)}
		srv.Protocols.SetHTTP1(true)
		go func() { errs <- srv.ListenAndServeTLS(certFile, keyFile) }()
	}
	return <-errs
}

func (c *Cluster) registry(self string, p *PKI) component {
	// On loopback for the node (localhost:5000), and on the node's address for what pulls in a
	// pod (OLM v1's catalogd and operator-controller).
	return component{name: "registry", args: []string{self, "registry",
		fmt.Sprintf("--addr=127.0.0.1:%d,%s:%d", RegistryPort, c.NodeIP, RegistryPort), "--cert=" + p.Registry.CertFile, "--key=" + p.Registry.KeyFile,
		"--dir=" + c.path("registry"),
	}}
}

// caTransport is an HTTP transport that trusts the system CAs and the cluster's CA.
func caTransport(caFile string) (*http.Transport, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("read the cluster CA (is the cluster up?): %w", err)
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no certificate", caFile)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	tr.Proxy = nil // the registry is on this machine
	return tr, nil
}
