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

package tlsprofile

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	configv1 "github.com/openshift/api/config/v1"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// A client's handshake outcome: the version it got, or "refused".
func handshake(t *testing.T, addr string, minV, maxV uint16, ciphers ...uint16) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MinVersion: minV, MaxVersion: maxV, CipherSuites: ciphers}) //nolint:gosec // a test server's own certificate
	if err != nil {
		return "refused"
	}
	defer conn.Close()
	return tls.VersionName(conn.ConnectionState().Version)
}

// What each profile lets a client negotiate, against a real TLS server.
func TestProfilesOnAServer(t *testing.T) {
	for _, tc := range []struct {
		profile string
		want    map[string]string // a client's offer -> outcome
	}{
		{"Old", map[string]string{"TLS 1.0": "TLS 1.0", "TLS 1.2 CBC": "TLS 1.2", "TLS 1.3": "TLS 1.3"}},
		{"Intermediate", map[string]string{"TLS 1.0": "refused", "TLS 1.2 CBC": "refused", "TLS 1.2 GCM": "TLS 1.2", "TLS 1.3": "TLS 1.3"}},
		{"Modern", map[string]string{"TLS 1.2 GCM": "refused", "TLS 1.3": "TLS 1.3"}},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			s, err := Named(tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			addr := serve(t, NewServer(s))
			for offer, want := range tc.want {
				if got := offerTo(t, addr, offer); got != want {
					t.Errorf("%s: a client offering %s got %s, want %s", tc.profile, offer, got, want)
				}
			}
		})
	}
	if _, err := Named("Custom"); err == nil {
		t.Error("--tls-profile Custom: no error")
	}
	if _, err := Named("Paranoid"); err == nil || !strings.Contains(err.Error(), "Old, Intermediate or Modern") {
		t.Errorf("--tls-profile Paranoid: %v", err)
	}
}

// offerTo makes a client's offer to addr: TLS 1.0 (with Old's CBC ciphers), TLS 1.2 with a CBC
// or a GCM cipher, or TLS 1.3.
func offerTo(t *testing.T, addr, offer string) string {
	switch offer {
	case "TLS 1.0":
		return handshake(t, addr, tls.VersionTLS10, tls.VersionTLS10, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA)
	case "TLS 1.2 CBC":
		return handshake(t, addr, tls.VersionTLS12, tls.VersionTLS12, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA)
	case "TLS 1.2 GCM":
		return handshake(t, addr, tls.VersionTLS12, tls.VersionTLS12, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)
	case "TLS 1.2 AES256":
		return handshake(t, addr, tls.VersionTLS12, tls.VersionTLS12, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384)
	}
	return handshake(t, addr, tls.VersionTLS13, tls.VersionTLS13)
}

// serve runs controller-runtime's metrics server over HTTPS with the Server's TLS option, as the
// operator does, until the test ends, and returns its address.
func serve(t *testing.T, s *Server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	srv, err := metricsserver.NewServer(metricsserver.Options{BindAddress: addr, SecureServing: true, TLSOpts: []func(*tls.Config){s.TLSOpt()}}, &rest.Config{}, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	NewWithT(t).Eventually(func() error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_ = c.Close()
		}
		return err
	}, 10*time.Second, 20*time.Millisecond).Should(Succeed())
	return addr
}

// On a cluster that serves OpenShift's APIServer config (its CRD from openshift/api in envtest):
// the operator finds it by discovery and its metrics server follows the config's profile, each
// change at the next handshake, and keeps its settings when a Custom profile names a cipher it
// does not know, saying why.
func TestFollowsTheClustersProfile(t *testing.T) {
	g := NewWithT(t)
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS must name the folder of kube-apiserver and etcd: run the tests with `make test`")
	}
	env := &envtest.Environment{CRDInstallOptions: envtest.CRDInstallOptions{Paths: []string{apiServerCRD(t)}}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(configv1.Install(scheme)).To(Succeed())
	c, err := client.New(cfg, client.Options{Scheme: scheme, FieldValidation: "Strict"})
	g.Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()

	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(OnOpenShift(dc)).To(BeTrue(), "the APIServer config is served")

	apiServer := &configv1.APIServer{ObjectMeta: metav1.ObjectMeta{Name: APIServerName},
		Spec: configv1.APIServerSpec{TLSSecurityProfile: &configv1.TLSSecurityProfile{Type: configv1.TLSProfileModernType, Modern: &configv1.ModernTLSProfile{}}}}
	g.Expect(c.Create(ctx, apiServer)).To(Succeed())
	initial, err := OfAPIServer(apiServer)
	g.Expect(err).NotTo(HaveOccurred())
	server := NewServer(initial)

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect((&Watcher{Client: mgr.GetClient(), Server: server}).SetupWithManager(mgr)).To(Succeed())
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() { cancel(); <-done })

	addr := serve(t, server)
	g.Expect(offerTo(t, addr, "TLS 1.2 GCM")).To(Equal("refused"), "Modern: TLS 1.3 only")
	g.Expect(offerTo(t, addr, "TLS 1.3")).To(Equal("TLS 1.3"))

	setProfile := func(p *configv1.TLSSecurityProfile) {
		g.Eventually(func() error {
			live := &configv1.APIServer{}
			if err := c.Get(ctx, client.ObjectKey{Name: APIServerName}, live); err != nil {
				return err
			}
			live.Spec.TLSSecurityProfile = p
			return c.Update(ctx, live)
		}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
	}

	// The same server, no restart: the next handshakes follow.
	setProfile(&configv1.TLSSecurityProfile{Type: configv1.TLSProfileIntermediateType, Intermediate: &configv1.IntermediateTLSProfile{}})
	g.Eventually(func() string { return offerTo(t, addr, "TLS 1.2 GCM") }, 10*time.Second, 100*time.Millisecond).Should(Equal("TLS 1.2"))
	g.Expect(offerTo(t, addr, "TLS 1.2 CBC")).To(Equal("refused"))

	custom := func(ciphers ...string) *configv1.TLSSecurityProfile {
		return &configv1.TLSSecurityProfile{Type: configv1.TLSProfileCustomType, Custom: &configv1.CustomTLSProfile{
			TLSProfileSpec: configv1.TLSProfileSpec{MinTLSVersion: configv1.VersionTLS12, Ciphers: ciphers}}}
	}
	setProfile(custom("ECDHE-RSA-AES256-GCM-SHA384"))
	g.Eventually(func() string { return offerTo(t, addr, "TLS 1.2 GCM") }, 10*time.Second, 100*time.Millisecond).Should(Equal("refused"),
		"a Custom profile: only its cipher")
	g.Expect(offerTo(t, addr, "TLS 1.2 AES256")).To(Equal("TLS 1.2"))
	g.Expect(refusedValue(t)).To(BeZero())

	// A cipher the operator does not know: refused, said, and the settings kept.
	setProfile(custom("ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-AES512-GCM-SHA999"))
	g.Eventually(func() float64 { return refusedValue(t) }, 10*time.Second, 100*time.Millisecond).Should(Equal(1.0))
	g.Expect(offerTo(t, addr, "TLS 1.2 AES256")).To(Equal("TLS 1.2"), "the settings kept")
	g.Expect(offerTo(t, addr, "TLS 1.2 GCM")).To(Equal("refused"))
	_, err = OfAPIServer(&configv1.APIServer{Spec: configv1.APIServerSpec{TLSSecurityProfile: custom("ECDHE-RSA-AES512-GCM-SHA999")}})
	g.Expect(err).To(MatchError(ContainSubstring("names ciphers this operator cannot use")))
	g.Expect(err).To(MatchError(ContainSubstring("ECDHE-RSA-AES512-GCM-SHA999")))

	// An operator that starts while the cluster's profile is refused starts no weaker than it:
	// its version, the ciphers of it the operator knows.
	fallback, err := Named("Old")
	g.Expect(err).NotTo(HaveOccurred())
	started, follow, err := Initial(ctx, c, fallback)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(follow).To(BeTrue())
	g.Expect(started.MinVersion).To(BeEquivalentTo(tls.VersionTLS12))
	g.Expect(started.Ciphers).To(Equal([]uint16{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384}))
	restarted := serve(t, NewServer(started))
	g.Expect(offerTo(t, restarted, "TLS 1.2 AES256")).To(Equal("TLS 1.2"))
	g.Expect(offerTo(t, restarted, "TLS 1.2 GCM")).To(Equal("refused"))
	g.Expect(offerTo(t, restarted, "TLS 1.0")).To(Equal("refused"), "not --tls-profile's Old")

	// An operator that may not read the APIServer config (its install mode's rights) takes the
	// flag's profile, and follows nothing.
	nobody := rest.CopyConfig(cfg)
	nobody.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:operators:memcached-operator"}
	nc, err := client.New(nobody, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	started, follow, err = Initial(ctx, nc, fallback)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(follow).To(BeFalse())
	g.Expect(started).To(Equal(fallback))

	// Fixed: followed again.
	setProfile(nil)
	g.Eventually(func() float64 { return refusedValue(t) }, 10*time.Second, 100*time.Millisecond).Should(BeZero())
	g.Eventually(func() string { return offerTo(t, addr, "TLS 1.2 GCM") }, 10*time.Second, 100*time.Millisecond).Should(Equal("TLS 1.2"),
		"no profile: Intermediate, OpenShift's default")
}

// A profile that allows TLS 1.2 must name a cipher for it: TLS 1.3's, which Go does not let be
// chosen, are not one. What the operator then does is TLS 1.3 alone.
func TestTLS13CiphersAreNotTLS12s(t *testing.T) {
	g := NewWithT(t)
	spec := configv1.TLSProfileSpec{MinTLSVersion: configv1.VersionTLS12, Ciphers: []string{"TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256"}}
	_, err := FromSpec("Custom", spec, true)
	g.Expect(err).To(MatchError(ContainSubstring("allows VersionTLS12 but names no cipher for it")))
	g.Expect(NoWeakerThan("Custom", spec)).To(Equal(Settings{Profile: "Custom, TLS 1.3 alone", MinVersion: tls.VersionTLS13}))
	spec.Ciphers = append(spec.Ciphers, "ECDHE-RSA-AES128-GCM-SHA256")
	s, err := FromSpec("Custom", spec, true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Ciphers).To(Equal([]uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}))
}

// Off OpenShift the APIServer config is not served, and discovery says so.
func TestNotOpenShift(t *testing.T) {
	g := NewWithT(t)
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS must name the folder of kube-apiserver and etcd: run the tests with `make test`")
	}
	env := &envtest.Environment{}
	cfg, err := env.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(OnOpenShift(dc)).To(BeFalse())
}

// apiServerCRD is the APIServer CRD of openshift/api (the version go.mod names), as OpenShift
// installs it by default.
func apiServerCRD(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/openshift/api").Output()
	if err != nil {
		t.Fatalf("find openshift/api in the module cache: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "config", "v1", "zz_generated.crd-manifests", "0000_10_config-operator_01_apiservers-Default.crd.yaml")
}

func refusedValue(t *testing.T) float64 {
	t.Helper()
	m := &dto.Metric{}
	if err := refused.Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}
