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

// Package certs makes the certificates of a cache that serves TLS, as CloudNativePG does for its
// clusters: a certificate authority per cache, and from it the servers' certificate and the
// clients' certificates. Every key is ECDSA P-256.
//
// A CA is renewed by signing its own key again, so that a certificate it signed before verifies
// against the renewed CA and the other way round: clients that still hold the old CA keep
// connecting while the new one reaches them. A leaf (server or client) gets a new key each time
// (cert-manager's rotationPolicy Always).
package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"
)

// KeyPair is a certificate and its private key, both PEM.
type KeyPair struct {
	Cert, Key []byte
}

// backdate keeps a certificate valid on a node whose clock is a little behind the operator's.
const backdate = 5 * time.Minute

// NewCA makes a self-signed certificate authority named commonName, valid for validity from now.
func NewCA(commonName string, now time.Time, validity time.Duration) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return KeyPair{}, err
	}
	return selfSign(commonName, key, keyPEM, now, validity)
}

// RenewCA signs the CA's key again for validity from now: what it signed stays valid.
func RenewCA(ca KeyPair, now time.Time, validity time.Duration) (KeyPair, error) {
	cert, key, err := ca.parse()
	if err != nil {
		return KeyPair{}, err
	}
	if !cert.IsCA {
		return KeyPair{}, errors.New("the certificate is not a CA's")
	}
	return selfSign(cert.Subject.CommonName, key, ca.Key, now, validity)
}

func selfSign(commonName string, key *ecdsa.PrivateKey, keyPEM []byte, now time.Time, validity time.Duration) (KeyPair, error) {
	serial, err := newSerial()
	if err != nil {
		return KeyPair{}, err
	}
	ski := subjectKeyID(&key.PublicKey)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		SubjectKeyId:          ski,
		AuthorityKeyId:        ski,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), Key: keyPEM}, nil
}

// Leaf is what a certificate the CA signs is for.
type Leaf struct {
	// CommonName names the holder (a client's identity in memcached's log).
	CommonName string
	// DNSNames are the names a server answers to; a client certificate has none.
	DNSNames []string
	// Server makes a server certificate (TLS server authentication), else a client's.
	Server bool
}

// Sign makes a certificate for leaf, with a new key, signed by the CA and valid for validity from
// now, but never beyond the CA.
func Sign(ca KeyPair, leaf Leaf, now time.Time, validity time.Duration) (KeyPair, error) {
	caCert, caKey, err := ca.parse()
	if err != nil {
		return KeyPair{}, fmt.Errorf("the CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, err
	}
	serial, err := newSerial()
	if err != nil {
		return KeyPair{}, err
	}
	notAfter := now.Add(validity)
	if notAfter.After(caCert.NotAfter) {
		notAfter = caCert.NotAfter
	}
	usage := x509.ExtKeyUsageClientAuth
	if leaf.Server {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: leaf.CommonName},
		DNSNames:              slices.Clone(leaf.DNSNames),
		NotBefore:             now.Add(-backdate),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{usage},
		BasicConstraintsValid: true,
		AuthorityKeyId:        caCert.SubjectKeyId,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return KeyPair{}, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), Key: keyPEM}, nil
}

// Due says whether a certificate (PEM) must be renewed at now: when a third of its lifetime is
// left (cert-manager's default), when it is not valid yet, or when it cannot be read.
func Due(certPEM []byte, now time.Time) bool {
	cert, err := ParseCert(certPEM)
	if err != nil {
		return true
	}
	return !now.Before(RenewAt(cert)) || now.Before(cert.NotBefore)
}

// RenewAt is when a certificate is renewed: a third of its lifetime before it expires. Its
// lifetime counts from when it was issued, backdate after its NotBefore.
func RenewAt(cert *x509.Certificate) time.Time {
	issued := cert.NotBefore.Add(backdate)
	return cert.NotAfter.Add(-cert.NotAfter.Sub(issued) / 3)
}

// SignedBy says whether the certificate (PEM) was signed by the CA's key and is for leaf: its
// names and purpose. A certificate of other names (the Service renamed) is made again.
func SignedBy(certPEM []byte, ca KeyPair, leaf Leaf) bool {
	cert, err := ParseCert(certPEM)
	if err != nil {
		return false
	}
	caCert, err := ParseCert(ca.Cert)
	if err != nil || cert.CheckSignatureFrom(caCert) != nil {
		return false
	}
	usage := x509.ExtKeyUsageClientAuth
	if leaf.Server {
		usage = x509.ExtKeyUsageServerAuth
	}
	return cert.Subject.CommonName == leaf.CommonName && slices.Equal(cert.DNSNames, leaf.DNSNames) &&
		slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{usage})
}

// Matches says whether key (PEM) is the private key of the certificate (PEM).
func Matches(certPEM, keyPEM []byte) bool {
	_, _, err := KeyPair{Cert: certPEM, Key: keyPEM}.parse()
	return err == nil
}

// ParseCert reads the first certificate of a PEM block list.
func ParseCert(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

func (kp KeyPair) parse() (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cert, err := ParseCert(kp.Cert)
	if err != nil {
		return nil, nil, err
	}
	block, _ := pem.Decode(kp.Key)
	if block == nil {
		return nil, nil, errors.New("no PEM private key")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, nil, err
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, errors.New("the private key is not ECDSA")
	}
	if !ec.PublicKey.Equal(cert.PublicKey) {
		return nil, nil, errors.New("the private key is not the certificate's")
	}
	return cert, ec, nil
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func newSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}

// subjectKeyID is the SHA-1-length prefix of the SHA-256 of the public key (RFC 7093, method 1):
// the same for a CA renewed with its key, so what it signed names it still.
func subjectKeyID(pub *ecdsa.PublicKey) []byte {
	var raw []byte
	if k, err := pub.ECDH(); err == nil {
		raw = k.Bytes() // the uncompressed point, as RFC 5280 hashes it
	}
	sum := sha256.Sum256(raw)
	return bytes.Clone(sum[:20])
}
