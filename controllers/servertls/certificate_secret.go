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

package servertls

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/managercache"
	"github.com/example/memcached-operator/controllers/internal/progress"
	"github.com/example/memcached-operator/controllers/internal/serverset"
	"github.com/example/memcached-operator/internal/labels"
)

// A cache whose spec.tls.certificateSecret names a Secret serves the certificate in it, as
// cert-manager or OKD's service CA write one: the operator makes no <servers>-tls then, checks
// that the certificate is for the servers' names and signed by the CA clients are given, and
// gives applications that CA in the ca.crt of <servers>-client-tls (with the client certificate
// it still signs). The Secret is the user's: read, never written, and read live (it carries no
// label of the operator's, so the operator's cache of TLS Secrets does not hold it), again every
// DefaultCertificateSecretCheck, which notices a renewal long before the old certificate expires.

const (
	// DefaultCertificateSecretCheck is how often a cache's own certificate Secret is read again.
	DefaultCertificateSecretCheck = time.Minute
	// DefaultCASpread is how long clients are given both CAs before the servers serve the
	// certificate of a changed CA: the kubelet brings a changed Secret into pods within about a
	// minute (its sync period and its cache of Secrets).
	DefaultCASpread = 2 * time.Minute

	// OKD publishes its service CA bundle in every namespace in this ConfigMap; its service CA
	// writes Secrets with no ca.crt.
	serviceCAConfigMap = "openshift-service-ca.crt"
	serviceCAKey       = "service-ca.crt"
)

func certificateSecretOf(spec *cachev1.MemcachedSpec) string {
	if spec.TLS == nil {
		return ""
	}
	return spec.TLS.CertificateSecret
}

// errCertificateSecret is a named certificate Secret the servers cannot serve, and why.
type errCertificateSecret struct{ reason, message string }

func (e errCertificateSecret) Error() string { return e.message }

// userCertificate is the servers' certificate of the user's Secret, and the CA bundle that
// clients verify it with.
type userCertificate struct {
	cert, caBundle []byte
}

// readCertificateSecret reads the Secret spec.tls.certificateSecret names, and refuses what
// memcached or its clients could not use, saying why (errCertificateSecret).
func (r *Reconciler) readCertificateSecret(ctx context.Context, mc *cachev1.Memcached) (userCertificate, error) {
	name := certificateSecretOf(&mc.Spec)
	if slices.Contains([]string{serverset.CASecretName(mc.Name), serverset.ServerTLSSecretName(mc.Name), serverset.ClientTLSSecretOf(mc.Name)}, name) {
		return userCertificate{}, errCertificateSecret{"CertificateSecretInvalid", fmt.Sprintf(
			"spec.tls.certificateSecret names %s, a Secret the operator makes for this cache: name the Secret that holds your certificate", name)}
	}
	secret := &corev1.Secret{}
	if err := r.Live.Get(ctx, client.ObjectKey{Namespace: mc.Namespace, Name: name}, secret); apierrors.IsNotFound(err) {
		return userCertificate{}, errCertificateSecret{"CertificateSecretNotFound", fmt.Sprintf(
			"Secret %s (spec.tls.certificateSecret) does not exist: the servers start once it does (cert-manager writes it when its Certificate is issued)", name)}
	} else if err != nil {
		return userCertificate{}, fmt.Errorf("read Secret %s: %w", name, err)
	}
	invalid := func(format string, args ...any) (userCertificate, error) {
		return userCertificate{}, errCertificateSecret{"CertificateSecretInvalid", fmt.Sprintf("Secret %s (spec.tls.certificateSecret): ", name) + fmt.Sprintf(format, args...)}
	}
	pair, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return invalid("no certificate and key that match in %s and %s: %v", corev1.TLSCertKey, corev1.TLSPrivateKeyKey, err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0]) // the one memcached serves first
	if err != nil {
		return invalid("%s: %v", corev1.TLSCertKey, err)
	}
	bundle, from := secret.Data[serverset.CACertKey], "its "+serverset.CACertKey
	if len(bundle) == 0 {
		cm := &corev1.ConfigMap{}
		err := r.Live.Get(ctx, client.ObjectKey{Namespace: mc.Namespace, Name: serviceCAConfigMap}, cm)
		if client.IgnoreNotFound(err) != nil {
			return userCertificate{}, fmt.Errorf("read ConfigMap %s: %w", serviceCAConfigMap, err)
		}
		bundle, from = []byte(cm.Data[serviceCAKey]), fmt.Sprintf("ConfigMap %s (%s)", serviceCAConfigMap, serviceCAKey)
		if len(bundle) == 0 {
			return invalid("no %s, and no ConfigMap %s with %s (OKD's service CA): clients would have no CA to verify the servers with", serverset.CACertKey, serviceCAConfigMap, serviceCAKey)
		}
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		return invalid("no PEM certificate in the CA bundle, %s", from)
	}
	intermediates := x509.NewCertPool()
	for _, der := range pair.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			intermediates.AddCert(c)
		}
	}
	domain := serverset.Domain(serverset.HeadlessNameOf(mc.Name), mc.Namespace)
	// A server's stable name, and the headless Service's own (status.tls.serverName).
	for _, host := range []string{serverset.NameOf(mc.Name) + "-0." + domain, domain} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: intermediates, DNSName: host,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			return invalid("clients that verify %s with the CA of %s would refuse it: %v (it must hold the DNS names *.%s and %s)", host, from, err, domain, domain)
		}
	}
	return userCertificate{cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw}), caBundle: bundle}, nil
}

// clientCAOf is the ca.crt the client Secret is to hold for the user's CA bundle: the bundle; or,
// while it changes (a new issuer, or the operator's certificate replaced by the user's), the
// certificates the Secret held and the bundle's, so that clients and the operator verify the
// servers that still serve the certificate of before. It comes down to the bundle once every
// server serves the new certificate (trimClientCA).
func (r *Reconciler) clientCAOf(ctx context.Context, mc *cachev1.Memcached, bundle []byte) ([]byte, error) {
	held := &corev1.Secret{}
	if err := r.Secrets.Get(ctx, client.ObjectKey{Namespace: mc.Namespace, Name: serverset.ClientTLSSecretOf(mc.Name)}, held); err != nil {
		return bundle, client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(held, mc) {
		return bundle, nil // not ours: ensure refuses it
	}
	was := held.Data[serverset.CACertKey]
	if len(was) == 0 || holdsAll(was, bundle) {
		if len(was) == 0 || bytes.Equal(was, bundle) {
			return bundle, nil
		}
		return was, nil // a change under way
	}
	return append(append(bytes.TrimRight(slices.Clone(was), "\n"), '\n'), bundle...), nil
}

// markCAChange notes on the client Secret s when its ca.crt began to differ from the user's CA
// bundle (labels.CAChangedAt), and says when the servers may serve the new CA's certificate: a
// CASpread after that, so that the kubelet has brought both CAs to the clients first.
func (r *Reconciler) markCAChange(ctx context.Context, s *corev1.Secret, bundle []byte, now time.Time) (*corev1.Secret, time.Time, error) {
	if bytes.Equal(s.Data[serverset.CACertKey], bundle) {
		return s, time.Time{}, nil
	}
	if at, err := time.Parse(time.RFC3339, s.Annotations[labels.CAChangedAt]); err == nil {
		return s, at.Add(r.caSpread()), nil
	}
	s = s.DeepCopy()
	// To the nanosecond: at whole seconds, the next reconcile would read a time up to a second
	// earlier, and shorten the spread by as much.
	metav1.SetMetaDataAnnotation(&s.ObjectMeta, labels.CAChangedAt, now.UTC().Format(time.RFC3339Nano))
	if err := r.Update(ctx, s); err != nil {
		return nil, time.Time{}, fmt.Errorf("note the CA change on Secret %s: %w", s.Name, err)
	}
	return s, now.Add(r.caSpread()), nil
}

func (r *Reconciler) caSpread() time.Duration { return cmp.Or(r.CASpread, DefaultCASpread) }

// trimClientCA brings the client Secret's ca.crt down to the user's CA bundle, once every server
// serves the certificate it signs.
func (r *Reconciler) trimClientCA(ctx context.Context, made madeCertificates) error {
	if made.theirCA == nil || made.client == nil || bytes.Equal(made.client.Data[serverset.CACertKey], made.theirCA) {
		return nil
	}
	s := made.client.DeepCopy()
	s.Data[serverset.CACertKey] = made.theirCA
	delete(s.Annotations, labels.CAChangedAt)
	if err := r.Update(ctx, s); err != nil {
		return fmt.Errorf("update the CA of Secret %s: %w", s.Name, err) // a conflict: the next try reads it again
	}
	log.FromContext(ctx).Info("TLS Secret's CA trimmed: every server serves the certificate of spec.tls.certificateSecret", "secret", s.Name)
	return nil
}

// holdsAll reports whether PEM bundle have holds every certificate of PEM bundle want.
func holdsAll(have, want []byte) bool {
	held := map[string]bool{}
	for _, der := range derCerts(have) {
		held[string(der)] = true
	}
	for _, der := range derCerts(want) {
		if !held[string(der)] {
			return false
		}
	}
	return true
}

// derCerts are the certificates of a PEM bundle.
func derCerts(bundle []byte) [][]byte {
	var out [][]byte
	for {
		var block *pem.Block
		block, bundle = pem.Decode(bundle)
		if block == nil {
			return out
		}
		if block.Type == "CERTIFICATE" {
			out = append(out, block.Bytes)
		}
	}
}

// removeUnmountedServerSecret deletes the servers' certificate Secret the operator made, once the
// cache serves a certificate of the user's and no pod of it mounts the operator's any more.
func (r *Reconciler) removeUnmountedServerSecret(ctx context.Context, mc *cachev1.Memcached) error {
	name := serverset.ServerTLSSecretName(mc.Name)
	secret := &corev1.Secret{}
	if err := r.Secrets.Get(ctx, client.ObjectKey{Namespace: mc.Namespace, Name: name}, secret); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(secret, mc) {
		return nil
	}
	pods, err := serverset.PodsOfRelease(ctx, r.Client, mc, false)
	if err != nil {
		return err
	}
	for _, p := range pods {
		if managercache.MountsSecret(&p.Spec, name) {
			return nil // until the rollout has replaced it: a restart mounts its volumes again
		}
	}
	// Nor while the StatefulSet may still make a pod that mounts it: its template, or a rollout
	// not complete (a held partition, a pod still going).
	servers, err := serverset.Of(ctx, r.Client, mc)
	if err != nil || servers == nil {
		return err
	}
	if managercache.MountsSecret(&servers.Spec.Template.Spec, name) || !progress.OfStatefulSet(servers).Complete() || servers.Status.CurrentRevision != servers.Status.UpdateRevision {
		return nil
	}
	if err := r.Delete(ctx, secret, client.Preconditions{UID: &secret.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete Secret %s: %w", name, err)
	}
	log.FromContext(ctx).Info("TLS Secret deleted: the servers serve the certificate of spec.tls.certificateSecret", "secret", name)
	return nil
}
