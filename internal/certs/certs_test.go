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

package certs

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func mustCA(t *testing.T, validity time.Duration) KeyPair {
	t.Helper()
	ca, err := NewCA("memcached-sample CA", now, validity)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func mustSign(t *testing.T, ca KeyPair, leaf Leaf, at time.Time, validity time.Duration) KeyPair {
	t.Helper()
	kp, err := Sign(ca, leaf, at, validity)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

var server = Leaf{CommonName: "memcached-sample", DNSNames: []string{"*.memcached-sample-memcached.ns.svc", "memcached-sample-memcached.ns.svc"}, Server: true}
var client = Leaf{CommonName: "memcached-sample client"}

func verify(t *testing.T, ca KeyPair, leaf KeyPair, at time.Time, name string, usage x509.ExtKeyUsage) error {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca.Cert) {
		t.Fatal("the CA does not parse")
	}
	cert, err := ParseCert(leaf.Cert)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

func TestServerAndClientCertificatesVerifyAgainstTheCA(t *testing.T) {
	ca := mustCA(t, 365*24*time.Hour)
	srv := mustSign(t, ca, server, now, 90*24*time.Hour)
	if err := verify(t, ca, srv, now, "memcached-sample-memcached-2.memcached-sample-memcached.ns.svc", x509.ExtKeyUsageServerAuth); err != nil {
		t.Errorf("a server's stable name: %v", err)
	}
	if err := verify(t, ca, srv, now, "memcached-sample-memcached-2.other.ns.svc", x509.ExtKeyUsageServerAuth); err == nil {
		t.Error("a name the certificate does not hold verified")
	}
	if err := verify(t, ca, srv, now, "", x509.ExtKeyUsageClientAuth); err == nil {
		t.Error("the server's certificate authenticates a client")
	}
	cl := mustSign(t, ca, client, now, 90*24*time.Hour)
	if err := verify(t, ca, cl, now, "", x509.ExtKeyUsageClientAuth); err != nil {
		t.Errorf("the client's certificate: %v", err)
	}
	if err := verify(t, ca, cl, now, "", x509.ExtKeyUsageServerAuth); err == nil {
		t.Error("a client's certificate serves")
	}
	other := mustCA(t, 365*24*time.Hour)
	if err := verify(t, other, cl, now, "", x509.ExtKeyUsageClientAuth); err == nil {
		t.Error("another cache's CA took this cache's client")
	}
	if !SignedBy(srv.Cert, ca, server) || SignedBy(srv.Cert, other, server) || SignedBy(cl.Cert, ca, server) {
		t.Error("SignedBy tells certificates apart wrongly")
	}
	renamed := server
	renamed.DNSNames = []string{"*.renamed.ns.svc"}
	if SignedBy(srv.Cert, ca, renamed) {
		t.Error("a certificate for other names is taken")
	}
	if !Matches(srv.Cert, srv.Key) || Matches(srv.Cert, cl.Key) {
		t.Error("Matches pairs keys wrongly")
	}
}

// A renewed CA signs with the key it had: clients that still trust the old CA certificate accept
// servers signed after the renewal, and clients given the new one accept servers signed before.
func TestARenewedCAKeepsWhatItSigned(t *testing.T) {
	ca := mustCA(t, 30*24*time.Hour)
	before := mustSign(t, ca, server, now, 25*24*time.Hour)
	later := now.Add(21 * 24 * time.Hour)
	renewed, err := RenewCA(ca, later, 30*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if string(renewed.Key) != string(ca.Key) || string(renewed.Cert) == string(ca.Cert) {
		t.Fatal("a renewed CA has the same key and a new certificate")
	}
	after := mustSign(t, renewed, server, later, 5*24*time.Hour)
	name := "a.memcached-sample-memcached.ns.svc"
	if err := verify(t, ca, after, later, name, x509.ExtKeyUsageServerAuth); err != nil {
		t.Errorf("the old CA certificate rejects a server signed after the renewal: %v", err)
	}
	if err := verify(t, renewed, before, later, name, x509.ExtKeyUsageServerAuth); err != nil {
		t.Errorf("the renewed CA rejects a server signed before: %v", err)
	}
	if _, err := RenewCA(before, later, time.Hour); err == nil {
		t.Error("a server's certificate was renewed as a CA")
	}
}

func TestALeafNeverOutlivesItsCA(t *testing.T) {
	ca := mustCA(t, 24*time.Hour)
	leaf := mustSign(t, ca, server, now, 90*24*time.Hour)
	cert, _ := ParseCert(leaf.Cert)
	caCert, _ := ParseCert(ca.Cert)
	if !cert.NotAfter.Equal(caCert.NotAfter) {
		t.Errorf("the leaf expires %s, its CA %s", cert.NotAfter, caCert.NotAfter)
	}
}

func TestDue(t *testing.T) {
	ca := mustCA(t, 90*24*time.Hour)
	cert, _ := ParseCert(ca.Cert)
	at := RenewAt(cert)
	for _, c := range []struct {
		name string
		at   time.Time
		want bool
	}{
		{"new", now, false},
		{"just before a third of its life is left", at.Add(-time.Second), false},
		{"a third of its life left", at, true},
		{"expired", cert.NotAfter.Add(time.Hour), true},
		{"not valid yet (the clock went back)", cert.NotBefore.Add(-time.Hour), true},
	} {
		if got := Due(ca.Cert, c.at); got != c.want {
			t.Errorf("%s: Due = %v, want %v", c.name, got, c.want)
		}
	}
	// A short-lived certificate (the tests') lives two thirds of its life before renewal too.
	short := mustSign(t, ca, server, now, 30*time.Second)
	if Due(short.Cert, now.Add(19*time.Second)) || !Due(short.Cert, now.Add(20*time.Second)) {
		t.Error("a 30 s certificate is not due at 20 s of age")
	}
	if !Due([]byte("garbage"), now) {
		t.Error("an unreadable certificate is not due")
	}
}

// The certificates make a mutual TLS connection with Go's TLS: the server asks for a client
// certificate from the CA, and a client without one is refused.
func TestMutualTLS(t *testing.T) {
	at := time.Now()
	ca, err := NewCA("memcached-sample CA", at, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srv := mustSign(t, ca, server, at, time.Hour)
	cl := mustSign(t, ca, client, at, time.Hour)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.Cert)
	srvPair, err := tls.X509KeyPair(srv.Cert, srv.Key)
	if err != nil {
		t.Fatal(err)
	}
	clPair, err := tls.X509KeyPair(cl.Cert, cl.Key)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{srvPair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.WriteString(c, "OK\r\n"); _ = c.Close() }()
		}
	}()
	dial := func(certs []tls.Certificate) error {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(),
			&tls.Config{RootCAs: pool, ServerName: "s-0.memcached-sample-memcached.ns.svc", Certificates: certs, MinVersion: tls.VersionTLS13})
		if err != nil {
			return err
		}
		defer func() { _ = c.Close() }()
		_, err = io.ReadAll(c)
		return err
	}
	if err := dial([]tls.Certificate{clPair}); err != nil {
		t.Errorf("a client with the cache's certificate: %v", err)
	}
	if err := dial(nil); err == nil {
		t.Error("a client without a certificate was served")
	}
}
