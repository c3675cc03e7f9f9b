//go:build e2e

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

package e2e

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/certs"
)

// tlsCertificateValidity is how long the tutorial's operator makes the certificates of caches
// with spec.tls live (--tls-certificate-validity): one is renewed within the spec, a third of its
// life before it expires, while the local cluster's kubelet brings a changed Secret into its pods
// within its 15 s sync.
const tlsCertificateValidity = 2 * time.Minute

// tlsClientDir is where the TLS clients mount the cache's client Secret.
const tlsClientDir = "/etc/memcached-client"

// tlsClientPod runs memcache-client with the cache's client Secret mounted whole (a renewal
// reaches it).
func tlsClientPod(ns, name, secret string, args ...string) *corev1.Pod {
	pod := clientPod(ns, name, args...)
	pod.Spec.Volumes = []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "tls", MountPath: tlsClientDir, ReadOnly: true}}
	return pod
}

func runTLSClient(ns, name, secret string, out any, args ...string) {
	GinkgoHelper()
	pod := tlsClientPod(ns, name, secret, args...)
	Expect(k8s.Create(ctx(), pod)).To(Succeed())
	Eventually(podPhase(pod), 5*time.Minute, poll).Should(Or(Equal(corev1.PodSucceeded), Equal(corev1.PodFailed)))
	clientResult(pod, out)
}

// proveTLS uses a cache with spec.tls as an application with the cache's client certificate does:
// every key read back over TLS through status.servers, a client without the certificate and a
// plain-text one refused, stats still read by the operator and the exporter, and the servers'
// certificate renewed under a client that reads every key each second, with no failed request.
func proveTLS() {
	const ns = "memcached-tls"
	kubectl("create", "namespace", ns)
	DeferCleanup(deleteNamespace, ns)
	key := types.NamespacedName{Namespace: ns, Name: "cache"}
	Expect(k8s.Create(ctx(), &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
		Spec: cachev1.MemcachedSpec{ReplicaCount: ptr.To[int32](2), TLS: &cachev1.TLSSpec{Enabled: true},
			Metrics: &cachev1.MetricsSpec{Enabled: ptr.To(true)}}})).To(Succeed())
	status := func(g Gomega) cachev1.MemcachedStatus {
		mc := &cachev1.Memcached{}
		g.Expect(k8s.Get(ctx(), key, mc)).To(Succeed())
		return mc.Status
	}
	served := func(g Gomega) *cachev1.TLSStatus {
		st := status(g)
		g.Expect(st.ReadyServers).To(HaveLen(2))
		g.Expect(st.ReadyServers).To(Equal(st.Servers))
		g.Expect(st.Conditions).To(ContainElement(And(HaveField("Type", "CertificatesReady"), HaveField("Reason", "CertificatesServed"))))
		g.Expect(st.TLS).NotTo(BeNil())
		return st.TLS
	}
	var tls *cachev1.TLSStatus
	Eventually(func(g Gomega) { tls = served(g) }, timeout, poll).Should(Succeed())
	Expect(tls.ClientSecret).To(Equal("cache-memcached-client-tls"))
	list := strings.Join(status(Default).Servers, ",")
	Expect(kubectl("-n", ns, "get", "configmap", "cache-memcached-servers", "-o", "jsonpath={.data.MEMCACHED_TLS_SECRET}")).To(Equal(tls.ClientSecret))
	withTLS := []string{"-servers", list, "-tls-dir", tlsClientDir, "-tls-server-name", tls.ServerName}

	By("storing 10000 keys over mutual TLS through the server list and reading every one back")
	var stored, read clientCounts
	runTLSClient(ns, "store", tls.ClientSecret, &stored, append(withTLS, "-op", "store", "-keys", "10000")...)
	Expect(stored).To(And(HaveField("Hits", 10000), HaveField("Failures", 0)))
	runTLSClient(ns, "read", tls.ClientSecret, &read, append(withTLS, "-op", "read", "-keys", "10000")...)
	Expect(read).To(And(HaveField("Hits", 10000), HaveField("Misses", 0), HaveField("Wrong", 0), HaveField("Failures", 0)))

	By("refusing a client without the certificate, and one in plain text")
	var refused clientCounts
	runTLSClient(ns, "no-cert", tls.ClientSecret, &refused, append(withTLS, "-tls-no-cert", "-op", "read", "-keys", "20", "-wait-reachable", "0")...)
	Expect(refused).To(And(HaveField("Failures", 20), HaveField("Hits", 0)), "first error: %s", refused.FirstError)
	runClient(ns, "plain", &refused, "-servers", list, "-op", "read", "-keys", "20", "-wait-reachable", "0")
	Expect(refused).To(And(HaveField("Failures", 20), HaveField("Hits", 0)), "first error: %s", refused.FirstError)

	By("reading the servers' stats: the operator into status, the exporter for Prometheus")
	Eventually(func(g Gomega) {
		st := status(g)
		g.Expect(st.Stats).NotTo(BeNil())
		g.Expect(st.Stats.Pods).To(BeEquivalentTo(2))
		g.Expect(st.Stats.MaxConnections).To(BeNumerically(">=", 1024), "memcached's own figure, read over TLS")
	}, timeout, poll).Should(Succeed())
	pod := strings.SplitN(status(Default).Servers[0], ".", 2)[0]
	Expect(kubectl("get", "--raw", exporterMetrics(ns, pod))).To(ContainSubstring("\nmemcached_up 1\n"))

	By("renewing the servers' certificate while an application reads every key each second")
	watcher := tlsClientPod(ns, "watch", tls.ClientSecret, append(withTLS, "-op", "watch", "-keys", "2000", "-prefix", "renew", "-duration", "5m", "-interval", "1s")...)
	Expect(k8s.Create(ctx(), watcher)).To(Succeed())
	Eventually(func() string {
		logs, _ := kubectlOut("-n", ns, "logs", watcher.Name)
		return logs
	}, timeout, poll).Should(ContainSubstring("a pass hit every key"), "the first passes store every key")
	was := tls.NotAfter.Time
	Eventually(func(g Gomega) {
		now := served(g)
		g.Expect(now.NotAfter.After(was)).To(BeTrue(), "every server serves a renewed certificate")
	}, tlsCertificateValidity+timeout, poll).Should(Succeed())
	kubectl("-n", ns, "exec", watcher.Name, "--", "/usr/local/bin/memcache-client", "-op", "stop")
	Eventually(podPhase(watcher), time.Minute, poll).Should(Or(Equal(corev1.PodSucceeded), Equal(corev1.PodFailed)))
	var watched struct{ Passes []watchPass }
	clientResult(watcher, &watched)
	warm := slices.IndexFunc(watched.Passes, func(p watchPass) bool { return p.Requests > 0 && p.Hits == p.Requests })
	Expect(warm).To(BeNumerically(">=", 0))
	for _, p := range watched.Passes[warm:] {
		Expect(p.Failures).To(BeZero(), "pass at %s: %s", p.At.Format(time.TimeOnly), p.FirstError)
		Expect(p.Hits).To(Equal(p.Requests), "pass at %s: every key hit", p.At.Format(time.TimeOnly))
	}
	Expect(kubectl("-n", ns, "get", "events", "--field-selector", "reason=CertificateRenewed", "-o", "name")).NotTo(BeEmpty())
	By("the exporter still reading memcached, on the pod's loopback with no certificate")
	Eventually(func() string {
		out, _ := kubectlOut("get", "--raw", exporterMetrics(ns, pod))
		return out
	}, timeout, poll).Should(ContainSubstring("\nmemcached_up 1\n"))
}

// proveCAChange changes the CA that signs a user's certificateSecret, as cert-manager does when
// its Certificate moves to another issuer: the exporter, which reads memcached on the pod's
// loopback with no certificate, reports memcached up at every scrape across the switch, and an
// application given the new CA reads every key stored before it.
func proveCAChange() {
	const ns = "memcached-tls-ca"
	kubectl("create", "namespace", ns)
	DeferCleanup(deleteNamespace, ns)
	key := types.NamespacedName{Namespace: ns, Name: "cache"}
	domain := "cache-memcached-headless." + ns + ".svc"
	certificate := func(issuer string) (certs.KeyPair, map[string][]byte) {
		ca, err := certs.NewCA(issuer, time.Now(), 24*time.Hour)
		Expect(err).NotTo(HaveOccurred())
		leaf, err := certs.Sign(ca, certs.Leaf{CommonName: domain, DNSNames: []string{"*." + domain, domain}, Server: true}, time.Now(), 12*time.Hour)
		Expect(err).NotTo(HaveOccurred())
		return leaf, map[string][]byte{"tls.crt": leaf.Cert, "tls.key": leaf.Key, "ca.crt": ca.Cert}
	}
	_, first := certificate("the first issuer")
	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache-cert"}, Type: corev1.SecretTypeTLS, Data: first}
	Expect(k8s.Create(ctx(), theirs)).To(Succeed())
	Expect(k8s.Create(ctx(), &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
		Spec: cachev1.MemcachedSpec{ReplicaCount: ptr.To[int32](1), TLS: &cachev1.TLSSpec{Enabled: true, CertificateSecret: theirs.Name},
			Metrics: &cachev1.MetricsSpec{Enabled: ptr.To(true)}}})).To(Succeed())
	served := func(g Gomega) *cachev1.TLSStatus {
		mc := &cachev1.Memcached{}
		g.Expect(k8s.Get(ctx(), key, mc)).To(Succeed())
		g.Expect(mc.Status.ReadyServers).To(HaveLen(1))
		g.Expect(mc.Status.Conditions).To(ContainElement(And(HaveField("Type", "CertificatesReady"), HaveField("Reason", "CertificatesServed"))))
		g.Expect(mc.Status.TLS).NotTo(BeNil())
		g.Expect(mc.Status.TLS.NotAfter).NotTo(BeNil())
		return mc.Status.TLS
	}
	var tls *cachev1.TLSStatus
	Eventually(func(g Gomega) { tls = served(g) }, timeout, poll).Should(Succeed())
	withTLS := []string{"-servers", "cache-memcached-0." + domain + ":11211", "-tls-dir", tlsClientDir, "-tls-server-name", tls.ServerName}

	By("storing 5000 keys with the first issuer's CA")
	var stored clientCounts
	runTLSClient(ns, "store", tls.ClientSecret, &stored, append(withTLS, "-op", "store", "-keys", "5000")...)
	Expect(stored).To(And(HaveField("Hits", 5000), HaveField("Failures", 0)))

	By("scraping the exporter every 2 s while the certificate Secret moves to another issuer")
	stop := scrapeExporter(ns, "cache-memcached-0", 2*time.Second)
	next, byNext := certificate("the next issuer")
	want, err := certs.ParseCert(next.Cert)
	Expect(err).NotTo(HaveOccurred())
	Expect(k8s.Get(ctx(), client.ObjectKeyFromObject(theirs), theirs)).To(Succeed())
	theirs.Data = byNext
	Expect(k8s.Update(ctx(), theirs)).To(Succeed())
	Eventually(func(g Gomega) {
		now := served(g)
		g.Expect(now.NotAfter.Time).To(BeTemporally("~", want.NotAfter, time.Second), "the server serves the next issuer's certificate")
		g.Expect(kubectl("-n", ns, "get", "secret", tls.ClientSecret, "-o", "jsonpath={.data.ca\\.crt}")).To(Equal(base64.StdEncoding.EncodeToString(byNext["ca.crt"])),
			"clients are given the next CA alone")
	}, 5*time.Minute, poll).Should(Succeed())
	time.Sleep(20 * time.Second) // scrapes after the switch, as Prometheus goes on
	got := stop()
	Expect(len(got)).To(BeNumerically(">=", 20), "scrapes across the switch")
	for _, s := range got {
		Expect(s.up).To(Equal("1"), "scrape at %s: %s", s.at.Format(time.TimeOnly), s.err)
	}

	By("reading every key with the next issuer's CA")
	var read clientCounts
	runTLSClient(ns, "read", tls.ClientSecret, &read, append(withTLS, "-op", "read", "-keys", "5000")...)
	Expect(read).To(And(HaveField("Hits", 5000), HaveField("Misses", 0), HaveField("Wrong", 0), HaveField("Failures", 0)), "first error: %s", read.FirstError)
}

// exporterMetrics is the API server's path to the metrics of pod's exporter (the chart's port
// 9150), through its pod proxy.
func exporterMetrics(ns, pod string) string {
	return fmt.Sprintf("/api/v1/namespaces/%s/pods/%s:9150/proxy/metrics", ns, pod)
}

// scrape is one read of an exporter's metrics: memcached_up's value, or why there was none.
type scrape struct {
	at  time.Time
	up  string
	err string
}

// scrapeExporter reads the exporter of pod every interval, through the API server's pod proxy, as
// Prometheus would, until the returned stop, which gives every scrape.
func scrapeExporter(ns, pod string, interval time.Duration) (stop func() []scrape) {
	var (
		mu   sync.Mutex
		got  []scrape
		done = make(chan struct{})
	)
	go func() {
		defer GinkgoRecover()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s := scrape{at: time.Now()}
			out, err := kubectlOut("get", "--raw", exporterMetrics(ns, pod))
			if err != nil { // the API server's proxy, not the exporter: once more, as a scraper retries
				out, err = kubectlOut("get", "--raw", exporterMetrics(ns, pod))
			}
			if err != nil {
				s.err = err.Error()
			}
			for line := range strings.SplitSeq(out, "\n") {
				if v, ok := strings.CutPrefix(line, "memcached_up "); ok {
					s.up = v
				}
			}
			mu.Lock()
			got = append(got, s)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() []scrape {
		close(done)
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}
