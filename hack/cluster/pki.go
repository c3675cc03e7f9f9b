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
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// keyPair is a certificate with its key, as PEM files in the pki folder.
type keyPair struct {
	cert *x509.Certificate
	key  crypto.Signer
	// CertFile and KeyFile are the PEM files.
	CertFile, KeyFile string
}

type certSpec struct {
	name     string
	cn       string
	orgs     []string
	dnsNames []string
	ips      []string
	server   bool
	client   bool
}

// ensureCA loads the CA name from dir, or creates it.
func ensureCA(dir, name string) (*keyPair, error) {
	return ensureKeyPair(dir, name, nil, func() *x509.Certificate {
		return &x509.Certificate{
			Subject:               pkix.Name{CommonName: name},
			NotAfter:              time.Now().AddDate(10, 0, 0),
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			BasicConstraintsValid: true,
			IsCA:                  true,
		}
	})
}

// ensureCert loads a certificate signed by ca, or creates it.
func ensureCert(dir string, ca *keyPair, spec certSpec) (*keyPair, error) {
	var ips []net.IP
	for _, ip := range spec.ips {
		parsed := net.ParseIP(ip)
		if parsed == nil {
			return nil, fmt.Errorf("certificate %s: bad IP %q", spec.name, ip)
		}
		ips = append(ips, parsed)
	}
	return ensureKeyPair(dir, spec.name, ca, func() *x509.Certificate {
		tmpl := &x509.Certificate{
			Subject:     pkix.Name{CommonName: spec.cn, Organization: spec.orgs},
			NotAfter:    time.Now().AddDate(1, 0, 0),
			KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			DNSNames:    spec.dnsNames,
			IPAddresses: ips,
		}
		if spec.server {
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		}
		if spec.client {
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
		}
		return tmpl
	})
}

// ensureKeyPair loads name.crt and name.key from dir, or makes them from template, signed by
// parent (self-signed when parent is nil).
func ensureKeyPair(dir, name string, parent *keyPair, template func() *x509.Certificate) (*keyPair, error) {
	kp := &keyPair{CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
	if err := kp.load(); err == nil {
		return kp, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := template()
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	issuer, signer := tmpl, crypto.Signer(key)
	if parent != nil {
		issuer, signer = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, key.Public(), signer)
	if err != nil {
		return nil, err
	}
	if err := kp.write(der, key); err != nil {
		return nil, err
	}
	return kp, kp.load()
}

func (kp *keyPair) load() error {
	certPEM, err := os.ReadFile(kp.CertFile)
	if err != nil {
		return err
	}
	keyPEM, err := os.ReadFile(kp.KeyFile)
	if err != nil {
		return err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return fmt.Errorf("%s or %s is not PEM", kp.CertFile, kp.KeyFile)
	}
	if kp.cert, err = x509.ParseCertificate(cb.Bytes); err != nil {
		return err
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return fmt.Errorf("%s: not a signing key", kp.KeyFile)
	}
	kp.key = signer
	return nil
}

func (kp *keyPair) write(der []byte, key crypto.Signer) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(kp.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(kp.CertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err)
	}
	return n
}

// PKI holds every certificate of the cluster.
type PKI struct {
	CA, FrontProxyCA                                     *keyPair
	APIServer, APIServerKubeletClient, FrontProxyClient  *keyPair
	Admin, ControllerManager, Scheduler, Node, KubeProxy *keyPair
	KubeRouter, LocalStorage, KubeletServing, Registry   *keyPair
	ServiceAccountKey, ServiceAccountPub                 string
}

func (c *Cluster) ensurePKI() (*PKI, error) {
	dir := c.path("pki")
	if err := mkdirs(dir); err != nil {
		return nil, err
	}
	p := &PKI{}
	var err error
	if p.CA, err = ensureCA(dir, "ca"); err != nil {
		return nil, err
	}
	if p.FrontProxyCA, err = ensureCA(dir, "front-proxy-ca"); err != nil {
		return nil, err
	}
	specs := []struct {
		into *(*keyPair)
		ca   *keyPair
		spec certSpec
	}{
		{&p.APIServer, p.CA, certSpec{name: "apiserver", cn: "kube-apiserver", server: true,
			dnsNames: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc." + clusterDomain, "localhost"},
			ips:      []string{c.NodeIP, "127.0.0.1", apiServiceIP}}},
		{&p.APIServerKubeletClient, p.CA, certSpec{name: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}, client: true}},
		{&p.FrontProxyClient, p.FrontProxyCA, certSpec{name: "front-proxy-client", cn: "front-proxy-client", client: true}},
		{&p.Admin, p.CA, certSpec{name: "admin", cn: "kubernetes-admin", orgs: []string{"system:masters"}, client: true}},
		{&p.ControllerManager, p.CA, certSpec{name: "controller-manager", cn: "system:kube-controller-manager", client: true}},
		{&p.Scheduler, p.CA, certSpec{name: "scheduler", cn: "system:kube-scheduler", client: true}},
		{&p.Node, p.CA, certSpec{name: "node", cn: "system:node:" + c.NodeName, orgs: []string{"system:nodes"}, client: true}},
		{&p.KubeProxy, p.CA, certSpec{name: "kube-proxy", cn: "system:kube-proxy", client: true}},
		{&p.KubeRouter, p.CA, certSpec{name: "kube-router", cn: "system:kube-router", client: true}},
		{&p.LocalStorage, p.CA, certSpec{name: "local-storage", cn: "system:local-storage", client: true}},
		{&p.KubeletServing, p.CA, certSpec{name: "kubelet", cn: c.NodeName, server: true, dnsNames: []string{c.NodeName, "localhost"}, ips: []string{c.NodeIP, "127.0.0.1"}}},
		{&p.Registry, p.CA, certSpec{name: "registry", cn: "registry", server: true, dnsNames: []string{"localhost"}, ips: []string{"127.0.0.1", c.NodeIP}}},
	}
	for _, s := range specs {
		if *s.into, err = ensureCert(dir, s.ca, s.spec); err != nil {
			return nil, fmt.Errorf("certificate %s: %w", s.spec.name, err)
		}
	}
	// Host tools (operator-sdk, opm) trust the local registry through SSL_CERT_FILE=ca-bundle.crt.
	system, _ := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	ca, err := os.ReadFile(p.CA.CertFile)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "ca-bundle.crt"), append(append(system, '\n'), ca...), 0o644); err != nil {
		return nil, err
	}
	p.ServiceAccountKey, p.ServiceAccountPub = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if _, err := os.Stat(p.ServiceAccountKey); errors.Is(err, os.ErrNotExist) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
		pubDER, _ := x509.MarshalPKIXPublicKey(key.Public())
		if err := os.WriteFile(p.ServiceAccountKey, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p.ServiceAccountPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
			return nil, err
		}
	}
	return p, nil
}
