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
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func testCluster(t *testing.T) *Cluster {
	t.Helper()
	return &Cluster{StateDir: t.TempDir(), BinDir: "/nonexistent", NodeIP: "192.0.2.10", NodeName: "node-a"}
}

// The certificates chain to their CA, carry the names clients dial, and are kept across runs.
func TestPKI(t *testing.T) {
	c := testCluster(t)
	p, err := c.ensurePKI()
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(p.CA.cert)
	if _, err := p.APIServer.cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "kubernetes.default.svc.cluster.local"}); err != nil {
		t.Errorf("apiserver certificate for the in-cluster name: %v", err)
	}
	for _, ip := range []string{"192.0.2.10", "10.96.0.1", "127.0.0.1"} {
		if _, err := p.APIServer.cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: ip}); err != nil {
			t.Errorf("apiserver certificate for %s: %v", ip, err)
		}
	}
	if _, err := p.Registry.cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "localhost"}); err != nil {
		t.Errorf("registry certificate for localhost: %v", err)
	}
	if got := p.Node.cert.Subject; got.CommonName != "system:node:node-a" || !reflect.DeepEqual(got.Organization, []string{"system:nodes"}) {
		t.Errorf("node client certificate subject %v: the Node authorizer needs system:node:<name> in system:nodes", got)
	}
	if _, err := p.FrontProxyClient.cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("the front-proxy client must chain to the front-proxy CA, not the cluster CA")
	}

	again, err := c.ensurePKI()
	if err != nil {
		t.Fatal(err)
	}
	if !again.CA.cert.Equal(p.CA.cert) || !again.APIServer.cert.Equal(p.APIServer.cert) {
		t.Error("a second up must keep the certificates (kubeconfigs and the kubelet hold them)")
	}
}

// The rendered configurations carry the settings this machine needs (see shared notes).
func TestConfigs(t *testing.T) {
	c := testCluster(t)
	p, err := c.ensurePKI()
	if err != nil {
		t.Fatal(err)
	}
	var kubelet map[string]any
	if err := yaml.UnmarshalStrict([]byte(c.kubeletConfig(p)), &kubelet); err != nil {
		t.Fatalf("kubelet config is not YAML: %v", err)
	}
	for key, want := range map[string]any{"failCgroupV1": false, "cgroupDriver": "cgroupfs", "readOnlyPort": float64(0), "failSwapOn": false} {
		if kubelet[key] != want {
			t.Errorf("kubelet %s = %v, want %v", key, kubelet[key], want)
		}
	}
	if !strings.Contains(c.containerdConfig(), "restrict_oom_score_adj = true") {
		t.Error("containerd must restrict oom_score_adj: CAP_SYS_RESOURCE is not in the bounding set here")
	}
	var kubeProxy map[string]any
	if err := yaml.UnmarshalStrict([]byte(c.kubeProxyConfig()), &kubeProxy); err != nil {
		t.Fatalf("kube-proxy config is not YAML: %v", err)
	}
	if kubeProxy["mode"] != "iptables" {
		t.Errorf("kube-proxy mode %v", kubeProxy["mode"])
	}
	var cni map[string]any
	if err := yaml.Unmarshal([]byte(c.cniConfig()), &cni); err != nil {
		t.Fatalf("CNI config is not JSON: %v", err)
	}
	bridge := cni["plugins"].([]any)[0].(map[string]any)
	if bridge["ipMasq"] != false {
		t.Error("pods must not be masqueraded to the outside")
	}
	for _, a := range c.apiServer(p).args {
		if strings.HasPrefix(a, "--bind-address=") && a != "--bind-address=0.0.0.0" {
			t.Errorf("the API server must listen beyond loopback so pods reach it: %s", a)
		}
	}
}

// A component is known by its PID file only while that PID runs the recorded binary.
func TestPIDTracking(t *testing.T) {
	c := testCluster(t)
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("sleep(1) is not installed")
	}
	if err := c.start(component{name: "sleeper", args: []string{sleep, "30"}}); err != nil {
		t.Fatal(err)
	}
	pid, ok := c.pid("sleeper")
	if !ok {
		t.Fatal("a started component must be found by its PID")
	}
	if err := c.start(component{name: "sleeper", args: []string{sleep, "30"}}); err != nil {
		t.Fatal(err)
	}
	if again, _ := c.pid("sleeper"); again != pid {
		t.Errorf("start of a running component started another one (pid %d, then %d)", pid, again)
	}
	if err := c.stop("sleeper", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.pid("sleeper"); ok {
		t.Error("the component still runs after stop")
	}

	// A PID file naming a live process of another binary (a reused PID) is not ours.
	if err := os.MkdirAll(c.path("run"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.pidFile("impostor"), []byte(strconv.Itoa(os.Getpid())+" /usr/bin/not-this"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.pid("impostor"); ok {
		t.Error("a reused PID must not be taken for the component")
	}
}

// iptables rules are removed when they jump to the cluster's chains, quoted comments included.
func TestIptablesParsing(t *testing.T) {
	fields := strings.Fields(`-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD`)
	if !jumpsTo(fields, ours) {
		t.Error("a jump to KUBE-FORWARD is ours")
	}
	if jumpsTo(strings.Fields(`-A FORWARD -j DOCKER-USER`), ours) {
		t.Error("a jump to another chain is not ours")
	}
	want := []string{"-A", "FORWARD", "-m", "comment", "--comment", "kubernetes forwarding rules", "-j", "KUBE-FORWARD"}
	if got := unquote(fields); !reflect.DeepEqual(got, want) {
		t.Errorf("unquote = %q, want %q", got, want)
	}
}

// The same files give the same image digest, so images are reproducible.
func TestImagesAreReproducible(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tool")
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	a, err := binaryImage(bin, "/tool", "65532", "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := binaryImage(bin, "/tool", "65532", "")
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Errorf("digests differ: %s, %s", da, db)
	}
	cf, err := a.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532" || !reflect.DeepEqual(cf.Config.Entrypoint, []string{"/tool"}) {
		t.Errorf("config %+v", cf.Config)
	}
}

func TestSplitCRDs(t *testing.T) {
	in := "---\n# Source: a\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: a}\n--- # b\napiVersion: v1\nkind: Namespace\nmetadata: {name: olm}\n---\n"
	crds, rest := splitCRDs(in)
	if strings.Count(crds, "---") != 1 || !strings.Contains(crds, "name: a") || strings.Contains(crds, "Namespace") {
		t.Errorf("crds = %q", crds)
	}
	if strings.Count(rest, "---") != 1 || !strings.Contains(rest, "name: olm") {
		t.Errorf("rest = %q", rest)
	}
}

func TestMirrored(t *testing.T) {
	for ref, want := range map[string]string{
		"quay.io/example/memcached-operator:v0.1.0":         "localhost:5000/example/memcached-operator:v0.1.0",
		"quay.io/operator-framework/scorecard-test:v1.42.3": "localhost:5000/operator-framework/scorecard-test:v1.42.3",
		"docker.io/library/memcached:1.6.39":                "localhost:5000/library/memcached:1.6.39",
		"docker.io/memcached:1.6.39":                        "localhost:5000/library/memcached:1.6.39",
		"quay.io/a/b@sha256:" + strings.Repeat("0", 64):     "localhost:5000/a/b@sha256:" + strings.Repeat("0", 64),
	} {
		if got := mirrored(ref, true); got != want {
			t.Errorf("mirrored(%s) = %s, want %s", ref, got, want)
		}
	}
	if got := mirrored("quay.io/a/b:c", false); got != "quay.io/a/b:c" {
		t.Errorf("without mirror the reference is kept, got %s", got)
	}
	if !strings.Contains(registryHostsTOML("quay.io", "/ca.crt"), `server = "https://quay.io"`) ||
		!strings.Contains(registryHostsTOML("quay.io", "/ca.crt"), `[host."https://localhost:5000"]`) {
		t.Error("quay.io must be mirrored by the local registry")
	}
}

// netpol-off removes kube-router's chains alone: kube-proxy's and CNI's stay, the cluster runs on.
func TestNetpolOffRemovesKubeRoutersChainsAlone(t *testing.T) {
	for _, chain := range []string{"KUBE-ROUTER-FORWARD", "KUBE-ROUTER-INPUT", "KUBE-ROUTER-OUTPUT", "KUBE-POD-FW-ABCDEFGHIJKLMNOP", "KUBE-NWPLCY-DEFAULT", "KUBE-NWPLCY-XYZ"} {
		if !kubeRouterChain(chain) {
			t.Errorf("%s is kube-router's", chain)
		}
	}
	for _, chain := range []string{"KUBE-SERVICES", "KUBE-SVC-ABC", "KUBE-SEP-ABC", "KUBE-FORWARD", "KUBE-PROXY-FIREWALL", "KUBE-NODEPORTS", "CNI-FORWARD", "FORWARD"} {
		if kubeRouterChain(chain) {
			t.Errorf("%s is not kube-router's", chain)
		}
	}
	if !jumpsTo(strings.Fields(`-A FORWARD -m comment --comment "kube-router netpol" -j KUBE-ROUTER-FORWARD`), kubeRouterChain) {
		t.Error("FORWARD's jump to KUBE-ROUTER-FORWARD goes with it")
	}
	if jumpsTo(strings.Fields(`-A FORWARD -j KUBE-FORWARD`), kubeRouterChain) {
		t.Error("FORWARD's jump to kube-proxy's KUBE-FORWARD stays")
	}
}
