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

// Package serverset is what the operator knows of a Memcached's servers as the chart makes them:
// the names of their StatefulSet, Services and TLS Secrets, their port, which objects are the
// release's, and which pods are its servers, by ordinal, and ready.
package serverset

import (
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/example/memcached-operator/internal/labels"
)

// Port is memcached's port on every server (the chart's).
const Port = 11211

// The keys of a cache's CA Secret.
const (
	CACertKey = "ca.crt"
	CAKeyKey  = "ca.key"
)

// The chart's names for a release, written again here because the certificates must exist before
// the chart's pods mount them (a test renders the chart and compares).

// FullnameOf is the chart's memcached.fullname (the client Service's name).
func FullnameOf(release string) string {
	name := release
	if !strings.Contains(release, labels.ChartName) {
		name = release + "-" + labels.ChartName
	}
	return strings.TrimSuffix(truncate(name, 63), "-")
}

// NameOf is the chart's memcached.serversName: the StatefulSet's name.
func NameOf(release string) string {
	full := FullnameOf(release)
	if len(full) <= 52 {
		return full
	}
	sum := sha256.Sum256([]byte(full))
	return strings.TrimSuffix(truncate(full, 45), "-") + "-" + fmt.Sprintf("%x", sum)[:6]
}

// HeadlessNameOf is the chart's memcached.headlessName.
func HeadlessNameOf(release string) string { return NameOf(release) + "-headless" }

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// The Secrets of a cache that serves TLS: controllers/servertls makes them; the chart mounts the
// server's and, for the exporter, the client's.

// CASecretName is the Secret of the cache's CA (ca.crt, ca.key).
func CASecretName(release string) string { return NameOf(release) + "-ca" }

// ServerTLSSecretName is the Secret of the servers' certificate.
func ServerTLSSecretName(release string) string { return NameOf(release) + "-tls" }

// ClientTLSSecretName is the client certificate's Secret of the StatefulSet named servers.
func ClientTLSSecretName(servers string) string { return servers + "-client-tls" }

// ClientTLSSecretOf is the client certificate's Secret of a release.
func ClientTLSSecretOf(release string) string { return ClientTLSSecretName(NameOf(release)) }

// Domain is the DNS domain of the servers' pods: <headless Service>.<namespace>.svc.
func Domain(headless, namespace string) string { return headless + "." + namespace + ".svc" }
