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
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	cachev1 "github.com/example/memcached-operator/api/v1"
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
	Expect(kubectl("get", "--raw", fmt.Sprintf("/api/v1/namespaces/%s/pods/%s:9150/proxy/metrics", ns, pod))).To(ContainSubstring("\nmemcached_up 1\n"))

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
	By("the exporter still reading memcached with the renewed client certificate")
	Eventually(func() string {
		out, _ := kubectlOut("get", "--raw", fmt.Sprintf("/api/v1/namespaces/%s/pods/%s:9150/proxy/metrics", ns, pod))
		return out
	}, timeout, poll).Should(ContainSubstring("\nmemcached_up 1\n"))
}
