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

// Package tlsprofile gives the operator's metrics server the TLS settings of a TLS security
// profile (Old, Intermediate, Modern or Custom, as OpenShift defines them): on OpenShift the
// cluster's, from the APIServer config (config.openshift.io/v1 APIServer "cluster",
// spec.tlsSecurityProfile), followed while the operator runs without a restart; elsewhere the one
// the --tls-profile flag names. The profiles, and the mapping of their OpenSSL cipher names to Go's,
// are OpenShift's own (openshift/api, library-go, controller-runtime-common).
package tlsprofile

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	configv1 "github.com/openshift/api/config/v1"
	ocptls "github.com/openshift/controller-runtime-common/pkg/tls"
	libgocrypto "github.com/openshift/library-go/pkg/crypto"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// APIServerName is the name of the cluster's one APIServer config.
const APIServerName = ocptls.APIServerName

// Settings are what a profile sets on a TLS server: the least version and, below TLS 1.3, the
// cipher suites (Go does not let TLS 1.3's be chosen).
type Settings struct {
	// Profile names where the settings come from, for logs and messages.
	Profile    string
	MinVersion uint16
	Ciphers    []uint16
	// OpenSSLCiphers are Ciphers by their OpenSSL names, for servers built on OpenSSL (memcached).
	OpenSSLCiphers []string
}

// FromSpec turns a profile's spec into settings. A Custom profile (custom) must name only
// ciphers Go's TLS can use and, below TLS 1.3, at least one for TLS 1.2; an OpenShift profile may
// name some that Go cannot use (Old does), which are left out, as OpenShift's own components do.
func FromSpec(name string, spec configv1.TLSProfileSpec, custom bool) (Settings, error) {
	minVersion, err := libgocrypto.TLSVersion(string(spec.MinTLSVersion))
	if err != nil {
		return Settings{}, fmt.Errorf("TLS profile %s: minTLSVersion %q: %w", name, spec.MinTLSVersion, err)
	}
	ciphers, unsupported := goCiphers(spec)
	if custom && len(unsupported) > 0 {
		return Settings{}, fmt.Errorf("TLS profile %s names ciphers this operator cannot use (they are not OpenSSL or IANA names of a cipher Go's TLS supports): %s",
			name, strings.Join(unsupported, ", "))
	}
	if minVersion < tls.VersionTLS13 && len(ciphers) == 0 {
		return Settings{}, fmt.Errorf("TLS profile %s allows %s but names no cipher for it that this operator can use", name, spec.MinTLSVersion)
	}
	return Settings{Profile: name, MinVersion: minVersion, Ciphers: ciphers, OpenSSLCiphers: openSSLNames(ciphers)}, nil
}

// openSSLNames are the OpenSSL names of Go's cipher suites (Go knows them by their IANA names).
func openSSLNames(ciphers []uint16) []string {
	var out []string
	for _, id := range ciphers {
		if name, ok := openSSLName[tls.CipherSuiteName(id)]; ok {
			out = append(out, name)
		}
	}
	return out
}

// openSSLName maps the IANA names of the TLS 1.2 ciphers OpenShift's profiles name to OpenSSL's.
var openSSLName = func() map[string]string {
	m := map[string]string{}
	for _, spec := range configv1.TLSProfiles {
		for _, c := range spec.Ciphers {
			if iana := libgocrypto.OpenSSLToIANACipherSuites([]string{c}); len(iana) == 1 && iana[0] != c {
				m[iana[0]] = c
			}
		}
	}
	return m
}()

// goCiphers are the ciphers of a profile that Go's TLS can use below TLS 1.3 (whose own Go does
// not let be chosen), and the names it does not know.
func goCiphers(spec configv1.TLSProfileSpec) (ciphers []uint16, unsupported []string) {
	profile := spec
	profile.MinTLSVersion = configv1.VersionTLS12 // the ciphers whatever the version (it must parse)
	apply, unsupported := ocptls.NewTLSConfigFromProfile(profile)
	var c tls.Config
	apply(&c)
	for _, id := range c.CipherSuites {
		if !tls13Suites[id] {
			ciphers = append(ciphers, id)
		}
	}
	return ciphers, unsupported
}

// tls13Suites are TLS 1.3's cipher suites, which a profile may name.
var tls13Suites = map[uint16]bool{tls.TLS_AES_128_GCM_SHA256: true, tls.TLS_AES_256_GCM_SHA384: true, tls.TLS_CHACHA20_POLY1305_SHA256: true}

// NoWeakerThan is what the operator can do of a profile it refuses: the profile's least version
// with the ciphers of it that Go knows, or TLS 1.3 alone when it knows none (or not the version).
// A server that starts with a profile it cannot take fully starts no weaker than it.
func NoWeakerThan(name string, spec configv1.TLSProfileSpec) Settings {
	minVersion, err := libgocrypto.TLSVersion(string(spec.MinTLSVersion))
	if err != nil {
		minVersion = tls.VersionTLS13
	}
	ciphers, _ := goCiphers(spec)
	if minVersion >= tls.VersionTLS13 || len(ciphers) == 0 {
		return Settings{Profile: name + ", TLS 1.3 alone", MinVersion: tls.VersionTLS13}
	}
	return Settings{Profile: name + ", the ciphers the operator knows", MinVersion: minVersion, Ciphers: ciphers, OpenSSLCiphers: openSSLNames(ciphers)}
}

// Named is one of OpenShift's predefined profiles: Old, Intermediate or Modern.
func Named(name string) (Settings, error) {
	spec, ok := configv1.TLSProfiles[configv1.TLSProfileType(name)]
	if !ok || name == string(configv1.TLSProfileCustomType) {
		return Settings{}, fmt.Errorf("unknown TLS profile %q: Old, Intermediate or Modern", name)
	}
	return FromSpec(name, *spec, false)
}

// OfAPIServer is the profile the cluster's APIServer config sets: Intermediate when it sets none.
// A profile it refuses comes back as NoWeakerThan's settings with the error.
func OfAPIServer(apiServer *configv1.APIServer) (Settings, error) {
	profile := apiServer.Spec.TLSSecurityProfile
	spec, err := ocptls.GetTLSProfileSpec(profile)
	if err != nil {
		return NoWeakerThan("APIServer "+APIServerName, spec), fmt.Errorf("the TLS profile of APIServer %s: %w", APIServerName, err)
	}
	name, custom := string(configv1.TLSProfileIntermediateType), false
	if profile != nil && profile.Type != "" {
		name, custom = string(profile.Type), profile.Type == configv1.TLSProfileCustomType
	}
	name += " (APIServer " + APIServerName + ")"
	s, err := FromSpec(name, spec, custom)
	if err != nil {
		return NoWeakerThan(name, spec), err
	}
	return s, nil
}

// Initial is the metrics server's first settings on OpenShift: the cluster's profile, which the
// Watcher then follows (follow). One the operator cannot use fully is refused, as the Watcher
// refuses it, and the server starts with NoWeakerThan's settings of it. An operator that may not
// read the APIServer config (its rights are its install mode's) takes fallback and follows
// nothing.
func Initial(ctx context.Context, c client.Reader, fallback Settings) (s Settings, follow bool, err error) {
	apiServer := &configv1.APIServer{}
	err = c.Get(ctx, client.ObjectKey{Name: APIServerName}, apiServer)
	switch {
	case apierrors.IsForbidden(err):
		log.FromContext(ctx).Info("the operator may not read the cluster's TLS security profile: the metrics server takes --tls-profile",
			"profile", fallback.Profile, "error", err.Error())
		return fallback, false, nil
	case client.IgnoreNotFound(err) != nil:
		return Settings{}, false, fmt.Errorf("read the cluster's TLS security profile: %w", err)
	}
	s, err = OfAPIServer(apiServer)
	if err != nil {
		refused.Set(1)
		log.FromContext(ctx).Error(err, "the cluster's TLS security profile is refused: the metrics server starts no weaker than it", "profile", s.Profile)
	}
	return s, true, nil
}

// OnOpenShift reports whether the cluster serves OpenShift's APIServer config (config.openshift.io
// v1 apiservers), found from API discovery.
func OnOpenShift(dc discovery.DiscoveryInterface) (bool, error) {
	list, err := dc.ServerResourcesForGroupVersion(configv1.GroupVersion.String())
	if apierrors.IsNotFound(err) || discovery.IsGroupDiscoveryFailedError(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", configv1.GroupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == "apiservers" {
			return true, nil
		}
	}
	return false, nil
}

// Server holds the settings a TLS server uses now; a change applies to the next handshake,
// without a restart.
type Server struct {
	current atomic.Pointer[Settings]
}

// NewServer is a Server with the settings s.
func NewServer(s Settings) *Server {
	srv := &Server{}
	srv.Set(s)
	return srv
}

// Set changes the settings.
func (s *Server) Set(settings Settings) { s.current.Store(&settings) }

// Current is the settings in use.
func (s *Server) Current() Settings { return *s.current.Load() }

// TLSOpt makes a TLS server (controller-runtime's metrics server, through its TLSOpts) take the
// current settings at each handshake. The server's own config, whose certificate the metrics
// server sets after its TLSOpts, is cloned with them.
func (s *Server) TLSOpt() func(*tls.Config) {
	return func(base *tls.Config) {
		initial := s.Current()
		base.MinVersion, base.CipherSuites = initial.MinVersion, initial.Ciphers
		base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
			now := s.Current()
			c := base.Clone()
			c.GetConfigForClient = nil
			c.MinVersion, c.CipherSuites = now.MinVersion, now.Ciphers
			return c, nil
		}
	}
}

// refused is 1 while the operator keeps earlier settings because the cluster's profile cannot be
// used (a Custom profile with ciphers it does not know).
var refused = func() prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "memcached_operator", Name: "tls_profile_refused",
		Help: "1 while the cluster's TLS security profile cannot be used and the metrics server keeps its earlier settings; the log says why."})
	crmetrics.Registry.MustRegister(g)
	return g
}()

// Watcher follows the cluster's APIServer config: each change of its TLS profile reaches the
// Server; a profile the operator cannot use is refused with an error in the log and the
// memcached_operator_tls_profile_refused gauge, and the Server keeps what it had.
type Watcher struct {
	client.Client
	Server *Server
}

// The APIServer config is cluster-scoped: the rule to read it is config/rbac/tls_profile_role.yaml,
// apart from the namespaced rules of the markers.

// Reconcile reads the APIServer config and applies its profile.
func (w *Watcher) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	apiServer := &configv1.APIServer{}
	err := w.Get(ctx, client.ObjectKey{Name: APIServerName}, apiServer)
	if apierrors.IsNotFound(err) {
		apiServer = &configv1.APIServer{} // none: OpenShift's default, Intermediate
	} else if err != nil {
		return ctrl.Result{}, err
	}
	next, err := OfAPIServer(apiServer)
	was := w.Server.Current()
	// A profile changed to one refused keeps what the server had: it was the cluster's choice, or
	// no weaker than it.
	if err != nil {
		refused.Set(1)
		log.FromContext(ctx).Error(err, "the cluster's TLS security profile is refused: the metrics server keeps its settings", "keeps", was.Profile)
		return ctrl.Result{}, nil // the next change of the config brings us back
	}
	refused.Set(0)
	if !same(was, next) {
		w.Server.Set(next)
		log.FromContext(ctx).Info("the metrics server follows the cluster's TLS security profile", "profile", next.Profile,
			"minVersion", tls.VersionName(next.MinVersion), "ciphers", len(next.Ciphers))
	}
	return ctrl.Result{}, nil
}

func same(a, b Settings) bool {
	return a.Profile == b.Profile && a.MinVersion == b.MinVersion && slices.Equal(a.Ciphers, b.Ciphers)
}

// SetupWithManager watches the APIServer config named APIServerName.
func (w *Watcher) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("tls-profile").
		For(&configv1.APIServer{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetName() == APIServerName
		}))).
		Complete(w)
}
