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

// Package servertls is the controller of a cache's TLS: the CA, server and client certificates it
// makes and renews (or the tenant's own certificate), the servers made to serve a renewed one,
// and the CertificatesReady condition and status.tls.
package servertls

import (
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/managercache"
	"github.com/example/memcached-operator/controllers/internal/memcachedstatus"
	"github.com/example/memcached-operator/controllers/internal/serverset"
	"github.com/example/memcached-operator/controllers/internal/servertalk"
	"github.com/example/memcached-operator/controllers/internal/texts"
	"github.com/example/memcached-operator/internal/certs"
	"github.com/example/memcached-operator/internal/memcache"
)

// A cache with spec.tls serves TLS with certificates the operator makes for it, in the cache's
// namespace, each Secret controlled by the Memcached (deleted with it):
//   - <servers>-ca: the cache's CA (ca.crt, ca.key), renewed with its own key, so that what it
//     signed stays valid and clients holding the old ca.crt keep connecting;
//   - <servers>-tls: the servers' certificate (kubernetes.io/tls, with ca.crt) for their stable
//     names (<pod>.<headless>.<namespace>.svc) and the Services' names, which the pods mount;
//   - <servers>-client-tls: a client certificate (kubernetes.io/tls, with ca.crt) for
//     applications and the exporter, and the one the operator's own conversations present.
//
// Each is renewed with a third of its life left. The kubelet brings a renewed Secret into the
// running pods; memcached reads its files again on `refresh_certs`, which this controller sends to
// every server that still serves a certificate the Secret no longer holds, until none does. A
// handshake under way keeps the certificate it began with: no request fails.

const (
	// DefaultCAValidity and DefaultCertificateValidity are how long a cache's CA and the
	// certificates it signs are valid (kubeadm's CA; cert-manager's certificates).
	DefaultCAValidity          = 10 * 365 * 24 * time.Hour
	DefaultCertificateValidity = 90 * 24 * time.Hour

	// refreshRetry is how soon the servers are looked at again while one still serves a replaced
	// certificate: the kubelet brings a changed Secret into a pod within a minute or so.
	refreshRetry = 5 * time.Second
	// conflictLookAgain is how soon a cache whose Secret names are taken, or whose servers run
	// on a CA it no longer has, is looked at again.
	conflictLookAgain = time.Minute
	// silentRetry is how soon servers that did not complete a handshake are asked again.
	silentRetry = 30 * time.Second
)

// Reconciler makes, renews and removes the certificates of the caches that serve TLS,
// and makes their servers serve the renewed ones (see above).
type Reconciler struct {
	client.Client
	// Secrets reads the Secrets the operator made for TLS (SecretsCache); Live reads one
	// that the cache does not show (not yet, or no longer labelled as the operator's).
	Secrets      cache.Cache
	Live         client.Reader
	Recorder     events.EventRecorder
	Reach        *servertalk.Reach
	CAValidity   time.Duration
	CertValidity time.Duration
	// CertificateSecretCheck is how often a certificate Secret of the user's is read again (0:
	// DefaultCertificateSecretCheck).
	CertificateSecretCheck time.Duration
	// CASpread is how long clients are given both CAs while the user's CA changes (0:
	// DefaultCASpread).
	CASpread time.Duration
	// Workers handle that many caches at once; a namespace's conversations with its servers take one
	// at most (slots).
	Workers int

	slots servertalk.TenantSlots
}

// Reconcile brings a Memcached's certificates and what its servers serve to what spec.tls says.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	mc := &cachev1.Memcached{}
	if err := r.Get(ctx, req.NamespacedName, mc); err != nil || mc.DeletionTimestamp != nil {
		r.Reach.Forget(req.Namespace, serverset.NameOf(req.Name)) // its Secrets go with it (owner references)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !tlsOn(&mc.Spec) {
		return r.turnOff(ctx, mc)
	}
	now := time.Now()
	made, renewAt, err := r.ensureCertificates(ctx, mc, now)
	var taken errNameTaken
	var unusable errCertificateSecret
	refusal, lookAgain := "", time.Duration(0)
	if errors.As(err, &taken) {
		refusal, lookAgain = "SecretNameTaken", conflictLookAgain
	} else if errors.As(err, &unusable) {
		refusal, lookAgain = unusable.reason, r.certificateSecretCheck()
	}
	if refusal != "" {
		if c := memcachedstatus.Condition(mc.Status, cachev1.ConditionCertificatesReady); c.Reason != refusal {
			r.Recorder.Eventf(mc, nil, corev1.EventTypeWarning, refusal, "IssueCertificates", "%v", err)
		}
		return ctrl.Result{RequeueAfter: lookAgain}, r.SetStatus(ctx, mc, &cachev1.HelmCondition{
			Type: cachev1.ConditionCertificatesReady, Status: metav1.ConditionFalse, Reason: refusal, Message: err.Error()}, nil)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(made.issued) > 0 {
		r.Recorder.Eventf(mc, nil, corev1.EventTypeNormal, "CertificateIssued", "IssueCertificates", "issued %s", strings.Join(made.issued, "; "))
	}
	if len(made.renewed) > 0 {
		r.Recorder.Eventf(mc, nil, corev1.EventTypeNormal, "CertificateRenewed", "RenewCertificates", "renewed %s", strings.Join(made.renewed, "; "))
	}

	cond, notAfter, retry, err := r.serve(ctx, mc, made)
	if errors.Is(err, servertalk.ErrTenantBusy) {
		return ctrl.Result{RequeueAfter: servertalk.TenantRetry}, nil // another of the namespace's caches talks to its servers now
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	tlsStatus := &cachev1.TLSStatus{ClientSecret: serverset.ClientTLSSecretOf(mc.Name), ServerName: serverset.Domain(serverset.HeadlessNameOf(mc.Name), mc.Namespace),
		NotAfter: &metav1.Time{Time: notAfter.UTC()}}
	if err := r.SetStatus(ctx, mc, &cond, tlsStatus); err != nil {
		return ctrl.Result{}, err
	}
	if certificateSecretOf(&mc.Spec) != "" {
		if err := r.removeUnmountedServerSecret(ctx, mc); err != nil {
			return ctrl.Result{}, err
		}
		if cond.Reason == "CertificatesServed" {
			if err := r.trimClientCA(ctx, made); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	if retry > 0 {
		return ctrl.Result{RequeueAfter: retry}, nil
	}
	return ctrl.Result{RequeueAfter: max(time.Until(renewAt), time.Second)}, nil
}

func (r *Reconciler) certificateSecretCheck() time.Duration {
	return cmp.Or(r.CertificateSecretCheck, DefaultCertificateSecretCheck)
}

// turnOff removes the cache's TLS Secrets and what status says of TLS once spec.tls is off, but
// only when no server serves TLS any more: until the rollout has replaced them all, a TLS server
// that restarts mounts its Secret, and the operator reaches the others with the client one.
func (r *Reconciler) turnOff(ctx context.Context, mc *cachev1.Memcached) (ctrl.Result, error) {
	pods, err := serverset.PodsOfRelease(ctx, r.Client, mc, false)
	if err != nil {
		return ctrl.Result{}, err
	}
	var still []string
	for _, p := range pods {
		if servertalk.ServesTLS(p) {
			still = append(still, p.Name)
		}
	}
	if len(still) > 0 {
		if memcachedstatus.Condition(mc.Status, cachev1.ConditionCertificatesReady).Type == "" {
			return ctrl.Result{}, nil // never on, or its removal was written: nothing to say
		}
		cond := &cachev1.HelmCondition{Type: cachev1.ConditionCertificatesReady, Status: metav1.ConditionFalse, Reason: "TurningOff",
			Message: fmt.Sprintf("TLS is turned off; %s still %s it, with %s certificates, until the rollout replaces %s",
				strings.Join(still, ", "), texts.PluralVerb(len(still), "serves", "serve"), texts.PluralVerb(len(still), "its", "their"), texts.PluralVerb(len(still), "it", "them"))}
		return ctrl.Result{}, r.SetStatus(ctx, mc, cond, mc.Status.TLS) // the pods' events bring us back
	}
	r.Reach.Forget(mc.Namespace, serverset.NameOf(mc.Name))
	if err := r.removeSecrets(ctx, mc); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.RemoveStatus(ctx, mc)
}

func tlsOn(spec *cachev1.MemcachedSpec) bool { return spec.TLS != nil && spec.TLS.Enabled }

// serve makes every ready server that serves TLS serve the cache's current certificate, and
// reports it: the condition, when the oldest certificate served expires, and how soon to look
// again while not every server serves it (0: at the next renewal).
func (r *Reconciler) serve(ctx context.Context, mc *cachev1.Memcached, current madeCertificates) (cachev1.HelmCondition, time.Time, time.Duration, error) {
	cond := cachev1.HelmCondition{Type: cachev1.ConditionCertificatesReady}
	want, err := certs.ParseCert(current.server)
	if err != nil {
		return cond, time.Time{}, 0, err
	}
	pods, err := serverset.Ready(ctx, r.Client, mc)
	if err != nil {
		return cond, time.Time{}, 0, err
	}
	var tlsPods []*corev1.Pod
	for _, p := range pods {
		if servertalk.ServesTLS(p) {
			tlsPods = append(tlsPods, p)
		}
	}
	until := want.NotAfter.UTC().Format(time.RFC3339)
	if len(tlsPods) == 0 {
		cond.Status, cond.Reason = metav1.ConditionTrue, "CertificatesIssued"
		cond.Message = fmt.Sprintf("the servers' certificate is valid until %s; no server serving TLS is ready yet", until)
		return cond, want.NotAfter, 0, nil
	}
	// The namespace's slot, for the conversation alone: certificates, status and caches without
	// a ready TLS server take none. (A slot taken for the whole reconcile made every cache of a
	// namespace wait its turn, TLS or not, and ask again each second meanwhile: 1000 new caches in
	// one namespace made thousands of reconciles a second.)
	release, ok := r.slots.Take(client.ObjectKeyFromObject(mc))
	if !ok {
		return cond, time.Time{}, 0, servertalk.ErrTenantBusy
	}
	defer release()
	var stale, silent, foreign []string
	oldest := want.NotAfter
	// With the client Secret as just written, not as the cache may still show it: after a CA made
	// anew, the older client certificate would still be taken by the servers, and what they were
	// told (refresh_certs, with whichever files the kubelet had brought) would depend on a race.
	spreading := time.Now().Before(current.refreshAfter)
	for _, a := range servertalk.Ask(ctx, tlsPods, r.Reach.Pinning(current.client), func(ctx context.Context, srv memcache.Server) (*x509.Certificate, error) {
		served, err := memcache.ServedCertificate(ctx, srv, servertalk.CacheTimeout)
		if err != nil || served.Equal(want) || spreading {
			return served, err
		}
		// The kubelet may not have brought the new files into the pod yet: ask again next time.
		return served, memcache.RefreshCertificates(ctx, srv, servertalk.CacheTimeout)
	}) {
		var unknownCA x509.UnknownAuthorityError
		switch {
		case errors.As(a.Err, &unknownCA) || (a.Err != nil && strings.Contains(a.Err.Error(), "unknown certificate authority")):
			foreign = append(foreign, a.Pod.Name)
		case a.Err != nil:
			silent = append(silent, a.Pod.Name)
			log.FromContext(ctx).V(1).Info("a server's certificate is unknown", "error", a.Err.Error())
		case !a.Value.Equal(want):
			stale = append(stale, a.Pod.Name)
		}
		if a.Err == nil && a.Value != nil && a.Value.NotAfter.Before(oldest) {
			oldest = a.Value.NotAfter
		}
	}
	switch {
	case len(foreign) > 0 && current.theirCA != nil:
		cond.Status, cond.Reason = metav1.ConditionFalse, "CertificateAuthorityReplaced"
		cond.Message = fmt.Sprintf("%s %s a certificate that no CA clients are given (ca.crt of Secret %s) signs: delete %s one at a time to restart %s with the certificate of Secret %s",
			strings.Join(foreign, ", "), texts.PluralVerb(len(foreign), "serves", "serve"), serverset.ClientTLSSecretOf(mc.Name), texts.PluralVerb(len(foreign), "its pod", "their pods"), texts.PluralVerb(len(foreign), "it", "them"), certificateSecretOf(&mc.Spec))
		return cond, oldest, conflictLookAgain, nil
	case len(foreign) > 0:
		// A CA made anew (its Secret deleted or spoiled): the running servers neither present a
		// certificate it signed nor take the client certificate it signs.
		cond.Status, cond.Reason = metav1.ConditionFalse, "CertificateAuthorityReplaced"
		cond.Message = fmt.Sprintf("%s %s a certificate of a CA this cache no longer has (Secret %s was made anew): delete %s one at a time to restart %s with the new certificates",
			strings.Join(foreign, ", "), texts.PluralVerb(len(foreign), "serves", "serve"), serverset.CASecretName(mc.Name), texts.PluralVerb(len(foreign), "its pod", "their pods"), texts.PluralVerb(len(foreign), "it", "them"))
		return cond, oldest, conflictLookAgain, nil
	case len(stale) > 0 && spreading:
		cond.Status, cond.Reason = metav1.ConditionFalse, "Renewing"
		cond.Message = fmt.Sprintf("%s still %s the certificate of the CA of before: the servers serve the new CA's from %s, once the kubelet has brought both CAs (ca.crt of Secret %s) to the clients",
			strings.Join(stale, ", "), texts.PluralVerb(len(stale), "serves", "serve"), current.refreshAfter.UTC().Format(time.RFC3339), serverset.ClientTLSSecretOf(mc.Name))
	case len(stale) > 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, "Renewing"
		cond.Message = fmt.Sprintf("%s still %s a replaced certificate: the kubelet brings the renewed one into the pod, and memcached reads it on refresh_certs",
			strings.Join(stale, ", "), texts.PluralVerb(len(stale), "serves", "serve"))
	case len(silent) > 0:
		cond.Status, cond.Reason = metav1.ConditionUnknown, "ServersUnreachable"
		cond.Message = fmt.Sprintf("%s did not complete a TLS handshake within %s", strings.Join(silent, ", "), servertalk.CacheTimeout)
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, "CertificatesServed"
		cond.Message = fmt.Sprintf("every ready server (%d) serves the certificate valid until %s", len(tlsPods), until)
	}
	switch {
	case len(stale) > 0 && spreading:
		return cond, oldest, min(refreshRetry, max(time.Until(current.refreshAfter), 100*time.Millisecond)), nil
	case len(stale) > 0:
		return cond, oldest, refreshRetry, nil
	case len(silent) > 0:
		return cond, oldest, silentRetry, nil // servers that do not answer are asked less often
	}
	return cond, oldest, 0, nil
}

// SetStatus writes the CertificatesReady condition and status.tls, as their only writer.
func (r *Reconciler) SetStatus(ctx context.Context, mc *cachev1.Memcached, cond *cachev1.HelmCondition, tlsStatus *cachev1.TLSStatus) error {
	was := memcachedstatus.Condition(mc.Status, cachev1.ConditionCertificatesReady)
	if was.Type != "" && was.Status == cond.Status && was.Reason == cond.Reason && was.Message == cond.Message &&
		equality.Semantic.DeepEqual(mc.Status.TLS, tlsStatus) {
		return nil
	}
	cond.LastTransitionTime = metav1.Now()
	if was.Type != "" && was.Status == cond.Status {
		cond.LastTransitionTime = was.LastTransitionTime
	}
	// A CR deleted meanwhile has no status left to write.
	if err := memcachedstatus.TLSWriter.Write(ctx, r.Client, mc, &cachev1.MemcachedStatus{Conditions: []cachev1.HelmCondition{*cond}, TLS: tlsStatus}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("write the %s condition: %w", cachev1.ConditionCertificatesReady, err)
	}
	return nil
}

// RemoveStatus takes the CertificatesReady condition and status.tls out of status.
func (r *Reconciler) RemoveStatus(ctx context.Context, mc *cachev1.Memcached) error {
	if memcachedstatus.Condition(mc.Status, cachev1.ConditionCertificatesReady).Type == "" && mc.Status.TLS == nil {
		return nil
	}
	if err := memcachedstatus.TLSWriter.Write(ctx, r.Client, mc, &cachev1.MemcachedStatus{}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("remove what status says of TLS: %w", err)
	}
	return nil
}

// SetupWithManager reconciles a Memcached when it changes and when one of its TLS Secrets does (a
// tenant's edit or deletion is undone at once).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("memcached-tls").
		For(managercache.MemcachedObject(), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A server that becomes ready is asked what it serves.
		Watches(&corev1.Pod{}, serverset.ToMemcached(), builder.WithPredicates(serverset.ChartObjects, serverset.ReadinessChanged)).
		WatchesRawSource(source.Kind(r.Secrets, &corev1.Secret{},
			handler.TypedEnqueueRequestForOwner[*corev1.Secret](mgr.GetScheme(), mgr.GetRESTMapper(), &cachev1.Memcached{}, handler.OnlyControllerOwner()))).
		// At least two workers, of which a namespace takes one at most (slots).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 2)}).
		Complete(r)
}
