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

package controllers_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers"
	"github.com/example/memcached-operator/controllers/servertls"
	"github.com/example/memcached-operator/internal/certs"
	oplabels "github.com/example/memcached-operator/internal/labels"
)

// A cache with spec.tls: the operator makes its certificates, memcached (a real one on this
// machine's loopback, started with the options the chart renders) serves them, and the operator's
// own reads go over mutual TLS. The suite's operator makes certificates that live
// certificateValidity, so that a renewal happens within a spec.
var _ = Describe("TLS", func() {
	It("makes the cache's CA, the servers' and a client certificate, each controlled by the Memcached", func(ctx SpecContext) {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "tls"}
		createMemcached(ctx, key, "  replicaCount: 2\n  tls: {enabled: true}\n")
		DeferCleanup(func() { deleteMemcached(context.Background(), key) })

		ca, server, clientSecret := tlsSecrets(ctx, key)
		caPair := certs.KeyPair{Cert: ca.Data["ca.crt"], Key: ca.Data["ca.key"]}
		Expect(server.Type).To(Equal(corev1.SecretTypeTLS))
		Expect(clientSecret.Type).To(Equal(corev1.SecretTypeTLS))
		servers := eventuallyServers(ctx, key)
		name := fmt.Sprintf("%s-1.%s.%s.svc", servers.Name, servers.Spec.ServiceName, key.Namespace)
		Expect(verifyLeaf(caPair.Cert, server.Data["tls.crt"], name, x509.ExtKeyUsageServerAuth)).To(Succeed(), "a server's stable name")
		Expect(verifyLeaf(caPair.Cert, clientSecret.Data["tls.crt"], "", x509.ExtKeyUsageClientAuth)).To(Succeed())
		Expect(verifyLeaf(caPair.Cert, clientSecret.Data["tls.crt"], "", x509.ExtKeyUsageServerAuth)).NotTo(Succeed(), "a client certificate serves")
		Expect(clientSecret.Data["ca.crt"]).To(Equal(caPair.Cert), "clients verify the servers with ca.crt")

		By("rendering memcached's TLS options and the Secret's volume")
		mc := servers.Spec.Template.Spec.Containers[0]
		Expect(mc.Args).To(ContainElement("-Z"))
		Expect(tlsOptions(servers)).To(And(ContainSubstring("ssl_verify_mode=2"), ContainSubstring("ssl_min_version=2"),
			ContainSubstring("ssl_ciphers=ECDHE-")))
		Expect(servers.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("Secret.SecretName", server.Name)))

		By("saying so in status, and in the server list")
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCertificatesReady), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "CertificatesIssued")))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement("CertificateIssued"))
		Eventually(memcachedStatus(ctx, key), timeout, interval).Should(HaveField("TLS", And(Not(BeNil()),
			HaveField("ClientSecret", clientSecret.Name), HaveField("ServerName", servers.Spec.ServiceName+"."+key.Namespace+".svc"),
			HaveField("NotAfter", Not(BeNil())))))
		Eventually(func() float64 {
			st := &cachev1.Memcached{}
			Expect(k8sClient.Get(ctx, key, st)).To(Succeed())
			if st.Status.TLS == nil || st.Status.TLS.NotAfter == nil {
				return -1
			}
			return metricValue("memcached_operator_tls_certificate_expiration_timestamp_seconds",
				map[string]string{"memcached_namespace": key.Namespace, "memcached": key.Name}) - float64(st.Status.TLS.NotAfter.Unix())
		}, timeout, interval).Should(BeZero(), "the metric says when the served certificate expires, as status does")
		list := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: servers.Name + "-servers"}, list)).To(Succeed())
		Expect(list.Data).To(And(HaveKeyWithValue("MEMCACHED_TLS", "true"), HaveKeyWithValue("MEMCACHED_TLS_SECRET", clientSecret.Name)))

		By("making a deleted Secret again at once")
		Expect(k8sClient.Delete(ctx, server)).To(Succeed())
		Eventually(func(g Gomega) types.UID {
			s := &corev1.Secret{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(server), s)).To(Succeed())
			return s.UID
		}, timeout, interval).ShouldNot(Equal(server.UID))

		By("removing the Secrets and the condition when TLS is turned off")
		setSpec(ctx, key, "  replicaCount: 2\n  tls: {enabled: false}\n")
		for _, s := range []*corev1.Secret{ca, server, clientSecret} {
			Eventually(func() bool {
				return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(s), &corev1.Secret{}))
			}, timeout, interval).Should(BeTrue(), s.Name)
		}
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCertificatesReady), timeout, interval).Should(HaveField("Type", ""))
		Eventually(memcachedStatus(ctx, key), timeout, interval).Should(HaveField("TLS", BeNil()))
		Eventually(func(g Gomega) []string {
			s, err := serversOfRelease(ctx, key)
			g.Expect(err).NotTo(HaveOccurred())
			return s.Spec.Template.Spec.Containers[0].Args
		}, timeout, interval).ShouldNot(ContainElement("-Z"))
	})

	It("never takes over a Secret of the cache's names that it did not make", func(ctx SpecContext) {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "tls"}
		theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: "tls-memcached-tls"},
			StringData: map[string]string{"tls.crt": "their own"}}
		Expect(k8sClient.Create(ctx, theirs)).To(Succeed())
		createMemcached(ctx, key, "  replicaCount: 1\n  tls: {enabled: true}\n")
		DeferCleanup(func() { deleteMemcached(context.Background(), key) })

		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCertificatesReady), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "SecretNameTaken"),
			HaveField("Message", ContainSubstring("Secret tls-memcached-tls exists and was not made by the operator"))))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement("SecretNameTaken"))
		Consistently(func(g Gomega) {
			s := &corev1.Secret{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(theirs), s)).To(Succeed())
			g.Expect(s.OwnerReferences).To(BeEmpty())
			g.Expect(s.Data).To(Equal(map[string][]byte{"tls.crt": []byte("their own")}))
		}, 2*time.Second, interval).Should(Succeed())

		By("leaving it in place when TLS is turned off")
		setSpec(ctx, key, "  replicaCount: 1\n")
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCertificatesReady), timeout, interval).Should(HaveField("Type", ""))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(theirs), &corev1.Secret{})).To(Succeed())
	})

	It("reads memcached over mutual TLS, and renews the servers' certificate under a reading client without a failed request", func(ctx SpecContext) {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "tls"}
		createMemcached(ctx, key, "  replicaCount: 1\n  tls: {enabled: true}\n")
		DeferCleanup(func() { deleteMemcached(context.Background(), key) })
		_, server, clientSecret := tlsSecrets(ctx, key)
		servers := eventuallyServers(ctx, key)

		// The kubelet's part: the Secrets' files in the pod, brought up to date as they change.
		dir, clientDir := mountedSecret(ctx, server), mountedSecret(ctx, clientSecret)
		opts := strings.ReplaceAll(tlsOptions(servers), "/etc/memcached/tls", dir)
		host := startMemcached(8, "-Z", "-o", opts)
		args := slices.Clone(servers.Spec.Template.Spec.Containers[0].Args)
		memcachedPod(ctx, key, "tls-memcached-0", host, true, func(p *corev1.Pod) {
			p.Spec.Hostname, p.Spec.Subdomain = "tls-memcached-0", servers.Spec.ServiceName
			p.Spec.Containers[0].Args = args
		})
		serverName := fmt.Sprintf("tls-memcached-0.%s.%s.svc", servers.Spec.ServiceName, key.Namespace)
		withClient := tlsClient(clientDir, serverName, true)

		By("reading memcached's stats over mutual TLS")
		Eventually(memcachedStatus(ctx, key), timeout, interval).Should(HaveField("Stats", And(Not(BeNil()), HaveField("Pods", int32(1)))))
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCertificatesReady), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "CertificatesServed")))

		By("serving a client with the cache's client certificate, and refusing one without, and plain text")
		Expect(setAndGet(withClient, statsAddr(host), "k", "v")).To(Succeed())
		Expect(setAndGet(tlsClient(clientDir, serverName, false), statsAddr(host), "k", "v")).NotTo(Succeed())
		Expect(plainGet(statsAddr(host), "k")).NotTo(Succeed())

		By("renewing the certificate while a client connects and reads all along")
		stopReading := readAllAlong(withClient, statsAddr(host))
		before := servedCertificate(withClient, statsAddr(host))
		Eventually(func(g Gomega) {
			now := servedCertificate(withClient, statsAddr(host))
			g.Expect(now.Equal(before)).To(BeFalse(), "memcached serves the renewed certificate")
			s := &corev1.Secret{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(server), s)).To(Succeed())
			want, err := certs.ParseCert(s.Data["tls.crt"])
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(now.Equal(want)).To(BeTrue(), "the Secret's certificate")
		}, certificateValidity+timeout, interval).Should(Succeed())
		stopReading()
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCertificatesReady), timeout, interval).Should(
			HaveField("Status", metav1.ConditionTrue))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement("CertificateRenewed"))

		By("keeping the certificates while TLS is turned off until no server serves it")
		setSpec(ctx, key, "  replicaCount: 1\n")
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCertificatesReady), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "TurningOff"), HaveField("Message", ContainSubstring("tls-memcached-0"))))
		Consistently(func() error { return k8sClient.Get(ctx, client.ObjectKeyFromObject(server), &corev1.Secret{}) }, 2*time.Second, interval).Should(Succeed())
		Expect(k8sClient.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: "tls-memcached-0"}})).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(server), &corev1.Secret{}))
		}, timeout, interval).Should(BeTrue(), "the Secrets go once the last TLS server has")
		Eventually(memcachedStatus(ctx, key), timeout, interval).Should(And(HaveField("TLS", BeNil()),
			HaveField("Conditions", Not(ContainElement(HaveField("Type", cachev1.ConditionCertificatesReady))))))
	})

	It("says which servers run on a CA the cache no longer has, when its CA Secret was deleted", func(ctx SpecContext) {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "tls"}
		createMemcached(ctx, key, "  replicaCount: 1\n  tls: {enabled: true}\n")
		DeferCleanup(func() { deleteMemcached(context.Background(), key) })
		ca, server, _ := tlsSecrets(ctx, key)
		servers := eventuallyServers(ctx, key)
		dir := mountedSecret(ctx, server)
		host := startMemcached(8, "-Z", "-o", strings.ReplaceAll(tlsOptions(servers), "/etc/memcached/tls", dir))
		args := slices.Clone(servers.Spec.Template.Spec.Containers[0].Args)
		memcachedPod(ctx, key, "tls-memcached-0", host, true, func(p *corev1.Pod) {
			p.Spec.Hostname, p.Spec.Subdomain = "tls-memcached-0", servers.Spec.ServiceName
			p.Spec.Containers[0].Args = args
		})
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCertificatesReady), timeout, interval).Should(
			HaveField("Reason", "CertificatesServed"))

		Expect(k8sClient.Delete(ctx, ca)).To(Succeed())
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCertificatesReady), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "CertificateAuthorityReplaced"),
			HaveField("Message", ContainSubstring("tls-memcached-0 serves a certificate of a CA this cache no longer has"))))
	})
})

// setSpec replaces the spec of the Memcached key.
func setSpec(ctx context.Context, key types.NamespacedName, spec string) {
	Eventually(func() error { return k8sClient.Update(ctx, withSpec(ctx, "Memcached", key, spec)) }, timeout, interval).Should(Succeed())
}

// tlsSecrets waits for the cache's three TLS Secrets and checks that the Memcached controls each.
func tlsSecrets(ctx context.Context, key types.NamespacedName) (ca, server, clientSecret *corev1.Secret) {
	servers := fmt.Sprintf("%s-memcached", key.Name)
	return ownedSecret(ctx, key, servers+"-ca"), ownedSecret(ctx, key, servers+"-tls"), ownedSecret(ctx, key, servers+"-client-tls")
}

func eventuallyServers(ctx context.Context, key types.NamespacedName) *appsv1.StatefulSet {
	var s *appsv1.StatefulSet
	Eventually(func() (err error) { s, err = serversOfRelease(ctx, key); return err }, timeout, interval).Should(Succeed())
	return s
}

// tlsOptions is the value of memcached's -o that follows -Z in the rendered arguments.
func tlsOptions(s *appsv1.StatefulSet) string {
	args := s.Spec.Template.Spec.Containers[0].Args
	i := slices.Index(args, "-Z")
	Expect(i).To(BeNumerically(">=", 0))
	Expect(len(args)).To(BeNumerically(">", i+2))
	Expect(args[i+1]).To(Equal("-o"))
	return args[i+2]
}

func verifyLeaf(caPEM, certPEM []byte, name string, usage x509.ExtKeyUsage) error {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	cert, err := certs.ParseCert(certPEM)
	if err != nil {
		return err
	}
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

// readAllAlong stores and reads a key over a new TLS connection every 20 ms until the returned
// stop, which expects that more than 10 were served and none failed.
func readAllAlong(cfg *tls.Config, addr string) (stop func()) {
	var served, failed atomic.Int64
	var lastErr atomic.Value
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-quit:
				return
			default:
			}
			if err := setAndGet(cfg, addr, fmt.Sprintf("k%d", i), "v"); err != nil {
				failed.Add(1)
				lastErr.Store(err.Error())
			} else {
				served.Add(1)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return func() {
		close(quit)
		<-done
		Expect(failed.Load()).To(BeZero(), "failed requests (the last: %v)", lastErr.Load())
		Expect(served.Load()).To(BeNumerically(">", 10))
	}
}

// mountedSecret writes a Secret's keys as files into a directory of their own and keeps them up
// to date until the spec ends, replacing them at once as the kubelet does (a renamed directory).
func mountedSecret(ctx context.Context, s *corev1.Secret) string {
	return mountedProjection(ctx, projection{secret: s})
}

// projection is a Secret's keys in a projected volume (none: all of them).
type projection struct {
	secret *corev1.Secret
	keys   []string
}

// mountedProjection is mountedSecret for the keys of several Secrets in one directory, as the
// kubelet mounts a projected volume.
func mountedProjection(ctx context.Context, sources ...projection) string {
	root := GinkgoT().TempDir()
	Expect(os.Chmod(root, 0o755)).To(Succeed())
	dir := filepath.Join(root, "mount")
	write := func(data map[string][]byte) {
		tmp, err := os.MkdirTemp(root, "data")
		Expect(err).NotTo(HaveOccurred())
		Expect(os.Chmod(tmp, 0o755)).To(Succeed())
		for k, v := range data {
			Expect(os.WriteFile(filepath.Join(tmp, k), v, 0o644)).To(Succeed()) // memcached runs as nobody
		}
		link := filepath.Join(root, "next")
		_ = os.Remove(link)
		Expect(os.Symlink(tmp, link)).To(Succeed())
		Expect(os.Rename(link, dir)).To(Succeed())
	}
	// The projected data of the Secrets as they are now, and their resourceVersions.
	data := func(secrets []*corev1.Secret) (map[string][]byte, string) {
		out, versions := map[string][]byte{}, ""
		for i, src := range sources {
			for k, v := range secrets[i].Data {
				if len(src.keys) == 0 || slices.Contains(src.keys, k) {
					out[k] = v
				}
			}
			versions += secrets[i].ResourceVersion + "/"
		}
		return out, versions
	}
	// The Secrets as given now, and their keys: the spec may read into the objects it passed.
	secrets, keys := make([]*corev1.Secret, len(sources)), make([]client.ObjectKey, len(sources))
	for i, src := range sources {
		secrets[i], keys[i] = src.secret.DeepCopy(), client.ObjectKeyFromObject(src.secret)
	}
	files, last := data(secrets)
	write(files)
	ctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	go func() {
		defer GinkgoRecover()
		for ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond) // far sooner than a kubelet, so that races with the files (serve after a new CA) show
			now := make([]*corev1.Secret, len(sources))
			var err error
			for i := range sources {
				now[i] = &corev1.Secret{}
				err = errors.Join(err, k8sClient.Get(ctx, keys[i], now[i]))
			}
			if err != nil {
				continue
			}
			if files, versions := data(now); versions != last {
				write(files)
				last = versions
			}
		}
	}()
	return dir
}

// tlsClient is a client's TLS configuration from a mounted client Secret, reading its certificate
// at every handshake (as clients that follow renewals do); withCert false presents none.
func tlsClient(dir, serverName string, withCert bool) *tls.Config {
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	Expect(err).NotTo(HaveOccurred())
	roots := x509.NewCertPool()
	Expect(roots.AppendCertsFromPEM(caPEM)).To(BeTrue())
	cfg := &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12}
	if withCert {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			// Both files of one version: the mount swaps its directory at once, as the kubelet
			// does, so a renewal between the two reads would pair one certificate with another's key.
			at, err := filepath.EvalSymlinks(dir)
			if err != nil {
				return nil, err
			}
			pair, err := tls.LoadX509KeyPair(filepath.Join(at, "tls.crt"), filepath.Join(at, "tls.key"))
			return &pair, err
		}
	}
	return cfg
}

// setAndGet stores a key over a new TLS connection and reads it back.
func setAndGet(cfg *tls.Config, addr, key, value string) error {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	r := bufio.NewReader(conn)
	if _, err := fmt.Fprintf(conn, "set %s 0 0 %d\r\n%s\r\nget %s\r\n", key, len(value), value, key); err != nil {
		return err
	}
	want := []string{"STORED", fmt.Sprintf("VALUE %s 0 %d", key, len(value)), value, "END"}
	for _, w := range want {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		if got := strings.TrimSuffix(line, "\r\n"); got != w {
			return fmt.Errorf("memcached answered %q, not %q", got, w)
		}
	}
	return nil
}

// plainGet reads a key in plain text.
func plainGet(addr, key string) error {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := fmt.Fprintf(conn, "get %s\r\n", key); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err == nil && !strings.HasPrefix(line, "END") && !strings.HasPrefix(line, "VALUE") {
		return fmt.Errorf("memcached answered %q", line)
	}
	if err == io.EOF {
		return fmt.Errorf("memcached closed the connection: %w", err)
	}
	return err
}

// servedCertificate is the certificate memcached proves in a handshake.
func servedCertificate(cfg *tls.Config, addr string) *x509.Certificate {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, cfg)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0]
}

var _ = Describe("The operator's cache of TLS Secrets", func() {
	It("keeps whole only the Secrets it makes: a tenant's look-alikes cost their names, whatever their size", func(ctx SpecContext) {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "tls"}
		createMemcached(ctx, key, "  replicaCount: 1\n  tls: {enabled: true}\n")
		DeferCleanup(func() { deleteMemcached(context.Background(), key) })
		mc := &cachev1.Memcached{}
		Expect(k8sClient.Get(ctx, key, mc)).To(Succeed())
		ca := controllers.CASecretOf(key.Name)
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: ca}, &corev1.Secret{})
		}, timeout, interval).Should(Succeed())

		By("a tenant making Secrets with the TLS labels and the Memcached as their controller, 512 KiB of data and 128 KiB of annotations each")
		const lookalikes = 8
		for i := range lookalikes {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: fmt.Sprintf("lookalike-%d", i),
				Labels:      map[string]string{oplabels.TLSSecret: "ca", oplabels.ManagedBy: oplabels.Operator, fmt.Sprintf("extra-%d", i): "x"},
				Annotations: map[string]string{"filler": strings.Repeat("a", 128<<10)},
				OwnerReferences: []metav1.OwnerReference{
					{APIVersion: cachev1.GroupVersion.String(), Kind: "Memcached", Name: mc.Name, UID: mc.UID, Controller: ptr.To(true)},
					{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "other"}}},
				Data: map[string][]byte{"ca.crt": make([]byte, 512<<10)}}
			Expect(k8sClient.Create(ctx, s)).To(Succeed())
		}

		By("reading them through a cache as the operator's is made")
		c, err := cache.New(cfg, servertls.SecretsCacheOptions(scheme, []string{key.Namespace}))
		Expect(err).NotTo(HaveOccurred())
		cacheCtx, stop := context.WithCancel(ctx)
		DeferCleanup(stop)
		go func() {
			defer GinkgoRecover()
			Expect(c.Start(cacheCtx)).To(Succeed())
		}()
		Expect(c.WaitForCacheSync(ctx)).To(BeTrue())
		Eventually(func(g Gomega) {
			list := &corev1.SecretList{}
			g.Expect(c.List(ctx, list, client.InNamespace(key.Namespace))).To(Succeed())
			kept := 0
			for _, s := range list.Items {
				if s.Name == ca {
					g.Expect(s.Data).To(HaveKey("ca.crt"), "the operator's own CA Secret is kept whole")
					continue
				}
				if !strings.HasPrefix(s.Name, "lookalike-") {
					continue
				}
				kept++
				g.Expect(s.Data).To(BeEmpty())
				g.Expect(s.Annotations).To(BeEmpty())
				g.Expect(s.OwnerReferences).To(HaveLen(1), "its controller alone")
				g.Expect(s.Labels).To(HaveLen(2), "the selector's labels alone")
				raw, err := json.Marshal(s)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(len(raw)).To(BeNumerically("<", 1024), "a look-alike costs its name, not its size: %s", raw)
			}
			g.Expect(kept).To(Equal(lookalikes))
		}, timeout, interval).Should(Succeed())
	})
})
