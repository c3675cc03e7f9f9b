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

// Package memcache is the operator's side of a conversation with one memcached server: dialled
// with a deadline (in TLS when the server serves it), its `stats`, `cache_memlimit`, allocation and
// `refresh_certs`, with bounded reads. The stats, resize, autopilot and TLS controllers all speak
// through it.
package memcache

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"time"
)

// Server is a memcached server as the operator talks to it: its address and, when it serves TLS
// (spec.tls), the client side of the handshake.
type Server struct {
	// Addr is host:port; the operator reaches a server at its pod's IP.
	Addr string
	// TLS is the client configuration, with the name the server's certificate must hold as
	// ServerName (the address is an IP); nil: plain text.
	TLS *tls.Config
}

// dial connects to the server, within ctx's deadline for the whole conversation: the connection
// takes that deadline, and a TLS handshake completes before dial returns.
func (s Server) dial(ctx context.Context) (net.Conn, error) {
	var conn net.Conn
	var err error
	if s.TLS != nil {
		conn, err = (&tls.Dialer{Config: s.TLS}).DialContext(ctx, "tcp", s.Addr)
	} else {
		conn, err = (&net.Dialer{}).DialContext(ctx, "tcp", s.Addr)
	}
	if err != nil {
		return nil, err
	}
	if deadline, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(deadline); err != nil {
			_ = conn.Close()
			return nil, err
		}
	}
	return conn, nil
}

// ServedCertificate is the certificate the TLS server srv proves in a handshake, within timeout.
func ServedCertificate(ctx context.Context, srv Server, timeout time.Duration) (*x509.Certificate, error) {
	if srv.TLS == nil {
		return nil, errors.New("the server does not serve TLS")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := srv.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	return servedCertificate(conn), nil
}

// servedCertificate is the certificate a TLS server proved on conn; nil in plain text.
func servedCertificate(conn net.Conn) *x509.Certificate {
	if c, ok := conn.(*tls.Conn); ok {
		if peers := c.ConnectionState().PeerCertificates; len(peers) > 0 {
			return peers[0]
		}
	}
	return nil
}
