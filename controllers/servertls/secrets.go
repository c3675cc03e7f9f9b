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
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/managercache"
	"github.com/example/memcached-operator/controllers/internal/serverset"
	"github.com/example/memcached-operator/internal/certs"
	"github.com/example/memcached-operator/internal/labels"
)

// The Secrets of a cache's TLS: made, renewed and removed by the operator, read through a cache
// of their own (see reconciler.go for what each holds and how the servers are made to serve
// them).

// tlsSecretRoles are the values of labels.TLSSecret: what each Secret holds.
const (
	roleCA     = "ca"
	roleServer = "server"
	roleClient = "client"
)

// SecretSelector selects the Secrets the operator makes for caches that serve TLS: its own
// cache of Secrets holds those alone (SecretsCache).
func SecretSelector() k8slabels.Selector {
	role, err := k8slabels.NewRequirement(labels.TLSSecret, selection.In, []string{roleCA, roleServer, roleClient})
	if err != nil {
		panic(err) // constant arguments
	}
	managed, err := k8slabels.NewRequirement(labels.ManagedBy, selection.Equals, []string{labels.Operator})
	if err != nil {
		panic(err)
	}
	return k8slabels.NewSelector().Add(*role, *managed)
}

// SecretsCache is a cache of the Secrets the operator made for TLS, in the watched namespaces
// (empty: all). The manager's own Secret cache holds the Helm release records alone, and one
// cache takes one selector per kind; this one is started with the manager (mgr.Add).
func SecretsCache(mgr ctrl.Manager, watchNamespaces []string) (cache.Cache, error) {
	opts := SecretsCacheOptions(mgr.GetScheme(), watchNamespaces)
	opts.Mapper = mgr.GetRESTMapper()
	c, err := cache.New(mgr.GetConfig(), opts)
	if err != nil {
		return nil, err
	}
	return c, mgr.Add(c)
}

// SecretsCacheOptions are the options of the TLS Secrets cache: what it selects and keeps.
func SecretsCacheOptions(scheme *runtime.Scheme, watchNamespaces []string) cache.Options {
	return cache.Options{
		Scheme:            scheme,
		ByObject:          map[client.Object]cache.ByObject{&corev1.Secret{}: {Label: SecretSelector(), Transform: SecretAsKept}},
		DefaultNamespaces: managercache.NamespaceConfigs(watchNamespaces),
	}
}

// SecretAsKept is the TLS Secrets cache's transform. The labels it selects by are anyone's to
// set in their namespace, and every tenant shares the operator's memory: a Secret is kept whole
// only if it is one the operator makes, a Secret of a role under the name the operator gives that
// role's Secret of its controlling Memcached (at most three per Memcached; the garbage collector
// removes those whose controller does not exist). Any other is kept as its name, the selector's
// labels and its controller alone: no data, annotations or other owners, whatever their size.
// (Whether the controller is the Memcached at hand, by UID, is checked where a Secret is used.)
func SecretAsKept(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	s.ManagedFields = nil
	owner := metav1.GetControllerOf(s)
	if owner != nil && owner.Kind == "Memcached" && owner.APIVersion == cachev1.GroupVersion.String() &&
		s.Name == tlsSecretNameOf(s.Labels[labels.TLSSecret], owner.Name) {
		return s, nil
	}
	kept := map[string]string{}
	for _, k := range []string{labels.TLSSecret, labels.ManagedBy, labels.Instance, labels.Name} {
		if v, ok := s.Labels[k]; ok {
			kept[k] = v
		}
	}
	s.Labels, s.Annotations, s.OwnerReferences = kept, nil, nil
	if owner != nil {
		s.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	s.Data, s.StringData = nil, nil
	return s, nil
}

// tlsSecretNameOf is the name the operator gives the Secret of role for Memcached release ("":
// no such role).
func tlsSecretNameOf(role, release string) string {
	switch role {
	case roleCA:
		return serverset.CASecretName(release)
	case roleServer:
		return serverset.ServerTLSSecretName(release)
	case roleClient:
		return serverset.ClientTLSSecretOf(release)
	}
	return ""
}

// errNameTaken is a Secret name of the cache's that something else already holds.
type errNameTaken struct{ name string }

func (e errNameTaken) Error() string {
	return fmt.Sprintf("Secret %s exists and was not made by the operator for this Memcached: the operator neither adopts nor changes it; delete or rename it", e.name)
}

// madeCertificates says what a reconcile issued for the first time and what it renewed.
type madeCertificates struct {
	issued, renewed []string
	// server is the servers' certificate (PEM) as the Secret now holds it.
	server []byte
	// client is the client Secret as this reconcile left it.
	client *corev1.Secret
	// theirCA is the CA bundle of the user's certificate Secret (nil: the operator's certificate),
	// which the client Secret's ca.crt comes down to once every server serves that certificate.
	theirCA []byte
	// refreshAfter is when the servers may be told to serve a certificate of a changed CA: the
	// clients have it by then (zero: at once).
	refreshAfter time.Time
}

// ensureCertificates makes or renews what is due of the cache's three Secrets (two when the
// servers serve a certificate of the user's), and says what it made and when the first of them is
// next due (or the user's Secret is to be read again).
func (r *Reconciler) ensureCertificates(ctx context.Context, mc *cachev1.Memcached, now time.Time) (madeCertificates, time.Time, error) {
	var made madeCertificates
	caSecret, err := r.ensure(ctx, mc, serverset.CASecretName(mc.Name), roleCA, corev1.SecretTypeOpaque,
		func(data map[string][]byte) bool {
			return certs.Matches(data[serverset.CACertKey], data[serverset.CAKeyKey]) && !certs.Due(data[serverset.CACertKey], now)
		},
		func(old map[string][]byte) (map[string][]byte, error) {
			was := certs.KeyPair{Cert: old[serverset.CACertKey], Key: old[serverset.CAKeyKey]}
			kp, err := certs.RenewCA(was, now, r.CAValidity)
			if err != nil { // none yet, or unreadable: a new CA, whose leaves are issued again below
				kp, err = certs.NewCA(fmt.Sprintf("%s/%s memcached CA", mc.Namespace, mc.Name), now, r.CAValidity)
				made.issued = append(made.issued, "a certificate authority for this cache (Secret "+serverset.CASecretName(mc.Name)+")")
			} else {
				made.renewed = append(made.renewed, "the cache's certificate authority, with its key (Secret "+serverset.CASecretName(mc.Name)+")")
			}
			return map[string][]byte{serverset.CACertKey: kp.Cert, serverset.CAKeyKey: kp.Key}, err
		})
	if err != nil {
		return made, time.Time{}, err
	}
	caPair := certs.KeyPair{Cert: caSecret.Data[serverset.CACertKey], Key: caSecret.Data[serverset.CAKeyKey]}
	renewAt := renewTime(caPair.Cert)
	headless := serverset.HeadlessNameOf(mc.Name)
	server := certs.Leaf{CommonName: serverset.NameOf(mc.Name), Server: true, DNSNames: []string{
		"*." + serverset.Domain(headless, mc.Namespace), serverset.Domain(headless, mc.Namespace),
		serverset.FullnameOf(mc.Name) + "." + mc.Namespace + ".svc",
	}}
	client := certs.Leaf{CommonName: fmt.Sprintf("%s/%s memcached client", mc.Namespace, mc.Name)}
	type leafSecret struct {
		name, role string
		leaf       certs.Leaf
		// ca is the ca.crt it carries: the CA the servers' certificate is verified with.
		ca []byte
	}
	leaves := []leafSecret{{serverset.ServerTLSSecretName(mc.Name), roleServer, server, caPair.Cert}, {serverset.ClientTLSSecretOf(mc.Name), roleClient, client, caPair.Cert}}
	if certificateSecretOf(&mc.Spec) != "" {
		theirs, err := r.readCertificateSecret(ctx, mc)
		if err != nil {
			return made, time.Time{}, err
		}
		made.server, made.theirCA = theirs.cert, theirs.caBundle
		clientCA, err := r.clientCAOf(ctx, mc, theirs.caBundle)
		if err != nil {
			return made, time.Time{}, err
		}
		leaves = []leafSecret{{serverset.ClientTLSSecretOf(mc.Name), roleClient, client, clientCA}}
		if at := now.Add(r.certificateSecretCheck()); at.Before(renewAt) {
			renewAt = at
		}
	}
	for _, leaf := range leaves {
		// The certificate and key of data are the CA's, for this leaf, a pair, and not yet due.
		certValid := func(data map[string][]byte) bool {
			return certs.SignedBy(data[corev1.TLSCertKey], caPair, leaf.leaf) &&
				certs.Matches(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey]) && !certs.Due(data[corev1.TLSCertKey], now)
		}
		secret, err := r.ensure(ctx, mc, leaf.name, leaf.role, corev1.SecretTypeTLS,
			func(data map[string][]byte) bool {
				return bytes.Equal(data[serverset.CACertKey], leaf.ca) && certValid(data)
			},
			func(old map[string][]byte) (map[string][]byte, error) {
				what := fmt.Sprintf("the %s certificate (Secret %s)", leaf.role, leaf.name)
				if old != nil && !bytes.Equal(leaf.ca, caPair.Cert) && certValid(old) {
					// Only the CA the servers are verified with changed (the user's certificate Secret).
					made.renewed = append(made.renewed, fmt.Sprintf("the CA to verify the servers with (%s of Secret %s)", serverset.CACertKey, leaf.name))
					return map[string][]byte{corev1.TLSCertKey: old[corev1.TLSCertKey], corev1.TLSPrivateKeyKey: old[corev1.TLSPrivateKeyKey], serverset.CACertKey: leaf.ca}, nil
				}
				kp, err := certs.Sign(caPair, leaf.leaf, now, r.CertValidity)
				if old == nil {
					made.issued = append(made.issued, what)
				} else {
					made.renewed = append(made.renewed, what)
				}
				return map[string][]byte{corev1.TLSCertKey: kp.Cert, corev1.TLSPrivateKeyKey: kp.Key, serverset.CACertKey: leaf.ca}, err
			})
		if err != nil {
			return made, time.Time{}, err
		}
		if at := renewTime(secret.Data[corev1.TLSCertKey]); at.Before(renewAt) {
			renewAt = at
		}
		if leaf.role == roleServer {
			made.server = secret.Data[corev1.TLSCertKey]
			continue
		}
		if made.theirCA != nil {
			if secret, made.refreshAfter, err = r.markCAChange(ctx, secret, made.theirCA, now); err != nil {
				return made, time.Time{}, err
			}
		}
		made.client = secret
	}
	return made, renewAt, nil
}

func renewTime(certPEM []byte) time.Time {
	cert, err := certs.ParseCert(certPEM)
	if err != nil {
		return time.Now()
	}
	return certs.RenewAt(cert)
}

// ensure makes the Secret name of the cache, or makes its data again when current says it is not,
// and returns it as written; issue gets the data it had. A Secret of that name the operator did
// not make for this Memcached is errNameTaken, and left as it is.
func (r *Reconciler) ensure(ctx context.Context, mc *cachev1.Memcached, name, role string, typ corev1.SecretType,
	current func(map[string][]byte) bool, issue func(old map[string][]byte) (map[string][]byte, error)) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	err := r.Secrets.Get(ctx, client.ObjectKey{Namespace: mc.Namespace, Name: name}, secret)
	if apierrors.IsNotFound(err) {
		data, err := issue(nil)
		if err != nil {
			return nil, err
		}
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: mc.Namespace, Labels: map[string]string{
				labels.ManagedBy: labels.Operator, labels.TLSSecret: role, labels.Instance: mc.Name, labels.Name: labels.ChartName}},
			Type: typ, Data: data,
		}
		if err := controllerutil.SetControllerReference(mc, secret, r.Scheme()); err != nil {
			return nil, err
		}
		if err := r.Create(ctx, secret); err != nil {
			if !apierrors.IsAlreadyExists(err) {
				return nil, fmt.Errorf("create Secret %s: %w", name, err)
			}
			// Ours that the cache does not show yet (or no longer labelled), or another's.
			secret = &corev1.Secret{}
			if err := r.Live.Get(ctx, client.ObjectKey{Namespace: mc.Namespace, Name: name}, secret); err != nil {
				return nil, err
			}
		} else {
			log.FromContext(ctx).Info("TLS Secret created", "secret", name)
			return secret, nil
		}
	} else if err != nil {
		return nil, err
	}
	if !metav1.IsControlledBy(secret, mc) || secret.Type != typ {
		return nil, errNameTaken{name}
	}
	if current(secret.Data) {
		return secret, nil
	}
	data, err := issue(secret.Data)
	if err != nil {
		return nil, err
	}
	secret = secret.DeepCopy()
	secret.Data = data
	if err := r.Update(ctx, secret); err != nil {
		return nil, fmt.Errorf("renew Secret %s: %w", name, err) // a conflict: the next try reads it again
	}
	log.FromContext(ctx).Info("TLS Secret renewed", "secret", name)
	return secret, nil
}

// removeSecrets deletes the TLS Secrets the operator made for the cache, once spec.tls is off.
func (r *Reconciler) removeSecrets(ctx context.Context, mc *cachev1.Memcached) error {
	for _, name := range []string{serverset.CASecretName(mc.Name), serverset.ServerTLSSecretName(mc.Name), serverset.ClientTLSSecretOf(mc.Name)} {
		secret := &corev1.Secret{}
		if err := r.Secrets.Get(ctx, client.ObjectKey{Namespace: mc.Namespace, Name: name}, secret); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		if !metav1.IsControlledBy(secret, mc) {
			continue
		}
		if err := r.Delete(ctx, secret, client.Preconditions{UID: &secret.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete Secret %s: %w", name, err)
		}
	}
	return nil
}
