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
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/certs"
)

// spec.tls.certificateSecret: the servers serve a certificate of the user's, as cert-manager or
// OKD's service CA write one, and the operator keeps making the client certificates. The suite's
// operator reads such a Secret again every second (CertificateSecretCheck), not every minute.
var _ = Describe("TLS with the user's certificate Secret", func() {
	It("serves the certificate of a Secret the user names, verified with its CA, and a renewal of it without a failed request", func(ctx SpecContext) {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "tls"}
		domain := "tls-memcached-headless." + key.Namespace + ".svc"
		userCA := newCA("the user's CA")
		theirs := userCertificate(key.Namespace, userCA, true, time.Hour, "*."+domain, domain)
		Expect(k8sClient.Create(ctx, theirs)).To(Succeed())
		createMemcached(ctx, key, "  replicaCount: 1\n  tls: {enabled: true, certificateSecret: cache-cert}\n")
		DeferCleanup(func() { deleteMemcached(context.Background(), key) })

		By("making the cache's CA and a client certificate, whose ca.crt is the user's CA, and no servers' certificate")
		ca, clientSecret := ownedSecret(ctx, key, "tls-memcached-ca"), ownedSecret(ctx, key, "tls-memcached-client-tls")
		Eventually(func(g Gomega) []byte {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(clientSecret), clientSecret)).To(Succeed())
			return clientSecret.Data["ca.crt"]
		}, timeout, interval).Should(Equal(userCA.Cert), "clients verify the servers with the CA of the user's Secret")
		Expect(verifyLeaf(ca.Data["ca.crt"], clientSecret.Data["tls.crt"], "", x509.ExtKeyUsageClientAuth)).To(Succeed())
		Consistently(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: "tls-memcached-tls"}, &corev1.Secret{}))
		}, 2*time.Second, interval).Should(BeTrue(), "a servers' certificate of the operator's")

		By("mounting the user's certificate and key with the cache's CA certificate, never the CA's key")
		servers := eventuallyServers(ctx, key)
		i := slices.IndexFunc(servers.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "tls" })
		Expect(i).To(BeNumerically(">=", 0))
		Expect(servers.Spec.Template.Spec.Volumes[i].Projected).To(HaveField("Sources", ConsistOf(
			HaveField("Secret", And(HaveField("Name", "cache-cert"), HaveField("Items", ConsistOf(HaveField("Key", "tls.crt"), HaveField("Key", "tls.key"))))),
			HaveField("Secret", And(HaveField("Name", ca.Name), HaveField("Items", ConsistOf(HaveField("Key", "ca.crt"))))))))

		By("serving it: an application with the client Secret stores and reads, the operator reads stats over mutual TLS")
		dir := mountedProjection(ctx, projection{theirs, []string{"tls.crt", "tls.key"}}, projection{ca, []string{"ca.crt"}})
		host := startMemcached(8, "-Z", "-o", strings.ReplaceAll(tlsOptions(servers), "/etc/memcached/tls", dir))
		args := slices.Clone(servers.Spec.Template.Spec.Containers[0].Args)
		memcachedPod(ctx, key, "tls-memcached-0", host, true, func(p *corev1.Pod) {
			p.Spec.Hostname, p.Spec.Subdomain = "tls-memcached-0", servers.Spec.ServiceName
			p.Spec.Containers[0].Args = args
			p.Spec.Volumes = servers.Spec.Template.Spec.Volumes
		})
		clientDir := mountedSecret(ctx, clientSecret)
		withClient := reloadingTLSClient(clientDir, "tls-memcached-0."+domain)
		Expect(setAndGet(withClient, statsAddr(host), "k", "v")).To(Succeed())
		Eventually(memcachedStatus(ctx, key), timeout, interval).Should(HaveField("Stats", And(Not(BeNil()), HaveField("Pods", int32(1)))))
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCertificatesReady), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "CertificatesServed")))

		By("serving the certificate its writer renews, while a client connects and reads all along")
		stopReading := readAllAlong(withClient, statsAddr(host))
		before := servedCertificate(withClient, statsAddr(host))
		renewed := userCertificate(key.Namespace, userCA, true, 2*time.Hour, "*."+domain, domain)
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(theirs), theirs)).To(Succeed())
		theirs.Data = renewed.Data
		Expect(k8sClient.Update(ctx, theirs)).To(Succeed())
		want, err := certs.ParseCert(renewed.Data["tls.crt"])
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() bool { return servedCertificate(withClient, statsAddr(host)).Equal(want) }, timeout, interval).Should(BeTrue())
		Expect(want.Equal(before)).To(BeFalse())

		By("serving the certificate of a new CA (another issuer): clients are given both CAs first, then the new one alone")
		nextCA := newCA("the user's next CA")
		byNext := userCertificate(key.Namespace, nextCA, true, 3*time.Hour, "*."+domain, domain)
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(theirs), theirs)).To(Succeed())
		theirs.Data = byNext.Data
		changed := time.Now()
		Expect(k8sClient.Update(ctx, theirs)).To(Succeed())
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCertificatesReady), timeout, interval).Should(And(
			HaveField("Reason", "Renewing"), HaveField("Message", ContainSubstring("once the kubelet has brought both CAs"))))
		next, err := certs.ParseCert(byNext.Data["tls.crt"])
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() bool { return servedCertificate(withClient, statsAddr(host)).Equal(next) }, timeout, 50*time.Millisecond).Should(BeTrue())
		Expect(time.Since(changed)).To(BeNumerically(">=", time.Second), "served no sooner than the spread (the suite's TLSCASpread) after the change")
		Eventually(func(g Gomega) []byte {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(clientSecret), clientSecret)).To(Succeed())
			return clientSecret.Data["ca.crt"]
		}, timeout, interval).Should(Equal(nextCA.Cert), "once every server serves it, clients are given the new CA alone")
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCertificatesReady), timeout, interval).Should(HaveField("Reason", "CertificatesServed"))
		stopReading()
		Eventually(func(g Gomega) time.Time {
			tls := memcachedStatus(ctx, key)(g).TLS
			g.Expect(tls).NotTo(BeNil())
			g.Expect(tls.NotAfter).NotTo(BeNil())
			return tls.NotAfter.Time
		}, timeout, interval).Should(BeTemporally("~", next.NotAfter, time.Second), "status.tls.notAfter: the served certificate's")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(theirs), &corev1.Secret{})).To(Succeed(), "the user's Secret stays")
	})

	It("says why it cannot serve a named Secret: missing, not for the servers' names, no CA; takes OKD's service CA bundle", func(ctx SpecContext) {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "tls"}
		domain := "tls-memcached-headless." + key.Namespace + ".svc"
		createMemcached(ctx, key, "  replicaCount: 1\n  tls: {enabled: true, certificateSecret: cache-cert}\n")
		DeferCleanup(func() { deleteMemcached(context.Background(), key) })
		refused := func(reason, message string) {
			GinkgoHelper()
			Eventually(memcachedCondition(ctx, key, cachev1.ConditionCertificatesReady), timeout, interval).Should(And(
				HaveField("Status", metav1.ConditionFalse), HaveField("Reason", reason), HaveField("Message", ContainSubstring(message))))
		}
		refused("CertificateSecretNotFound", "Secret cache-cert (spec.tls.certificateSecret) does not exist")
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement("CertificateSecretNotFound"))

		userCA := newCA("the user's CA")
		theirs := userCertificate(key.Namespace, userCA, true, time.Hour, "*.elsewhere."+key.Namespace+".svc")
		Expect(k8sClient.Create(ctx, theirs)).To(Succeed())
		refused("CertificateSecretInvalid", fmt.Sprintf("it must hold the DNS names *.%s and %s", domain, domain))

		By("a Secret of OKD's service CA: no ca.crt")
		okd := userCertificate(key.Namespace, userCA, false, time.Hour, "*."+domain, domain)
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(theirs), theirs)).To(Succeed())
		theirs.Data = okd.Data
		Expect(k8sClient.Update(ctx, theirs)).To(Succeed())
		refused("CertificateSecretInvalid", "no ca.crt, and no ConfigMap openshift-service-ca.crt")

		Expect(k8sClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: "openshift-service-ca.crt"},
			Data: map[string]string{"service-ca.crt": string(userCA.Cert)}})).To(Succeed())
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCertificatesReady), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "CertificatesIssued")))
		clientSecret := ownedSecret(ctx, key, "tls-memcached-client-tls")
		Expect(clientSecret.Data["ca.crt"]).To(Equal(userCA.Cert), "the service CA bundle, for clients")

		By("naming a Secret the operator makes")
		setSpec(ctx, key, "  replicaCount: 1\n  tls: {enabled: true, certificateSecret: tls-memcached-client-tls}\n")
		refused("CertificateSecretInvalid", "names tls-memcached-client-tls, a Secret the operator makes for this cache")
	})

	It("keeps its own servers' certificate while a pod still mounts it, once the user names a Secret", func(ctx SpecContext) {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "tls"}
		domain := "tls-memcached-headless." + key.Namespace + ".svc"
		createMemcached(ctx, key, "  replicaCount: 1\n  tls: {enabled: true}\n")
		DeferCleanup(func() { deleteMemcached(context.Background(), key) })
		_, server, _ := tlsSecrets(ctx, key)
		servers := eventuallyServers(ctx, key)
		// A pod of the servers as they were, which mounts the operator's certificate (not ready:
		// no memcached behind it).
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: "tls-memcached-0",
			Labels:          servers.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(servers, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
			Spec: *servers.Spec.Template.Spec.DeepCopy()}
		Expect(pod.Spec.Volumes).To(ContainElement(HaveField("Secret", HaveField("SecretName", server.Name))))
		Expect(k8sClient.Create(ctx, pod)).To(Succeed())

		Expect(k8sClient.Create(ctx, userCertificate(key.Namespace, newCA("the user's CA"), true, time.Hour, "*."+domain, domain))).To(Succeed())
		setSpec(ctx, key, "  replicaCount: 1\n  tls: {enabled: true, certificateSecret: cache-cert}\n")
		Eventually(func(g Gomega) {
			s := eventuallyServers(ctx, key)
			g.Expect(s.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("Projected", Not(BeNil()))))
		}, timeout, interval).Should(Succeed())
		Consistently(func() error { return k8sClient.Get(ctx, client.ObjectKeyFromObject(server), &corev1.Secret{}) }, 2*time.Second, interval).Should(Succeed())

		By("keeping it while the rollout that replaces that pod is not complete")
		Expect(k8sClient.Delete(ctx, pod)).To(Succeed())
		Consistently(func() error { return k8sClient.Get(ctx, client.ObjectKeyFromObject(server), &corev1.Secret{}) }, 2*time.Second, interval).Should(Succeed())
		setRollout(ctx, types.NamespacedName{Namespace: key.Namespace, Name: servers.Name}, 1, 1, 1)
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(server), &corev1.Secret{}))
		}, timeout, interval).Should(BeTrue(), "the operator's servers' certificate goes once no pod mounts it")
	})
})

func newCA(name string) certs.KeyPair {
	ca, err := certs.NewCA(name, time.Now(), 24*time.Hour)
	Expect(err).NotTo(HaveOccurred())
	return ca
}

// userCertificate is Secret cache-cert as cert-manager writes it (withCA: with ca.crt) or OKD's
// service CA does (without), for a certificate of names signed by ca, valid for validity.
func userCertificate(namespace string, ca certs.KeyPair, withCA bool, validity time.Duration, names ...string) *corev1.Secret {
	kp, err := certs.Sign(ca, certs.Leaf{CommonName: names[0], DNSNames: names, Server: true}, time.Now(), validity)
	Expect(err).NotTo(HaveOccurred())
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "cache-cert"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": kp.Cert, "tls.key": kp.Key}}
	if withCA {
		s.Data["ca.crt"] = ca.Cert
	}
	return s
}

// reloadingTLSClient is tlsClient with the client certificate, verifying the servers with the
// mounted ca.crt as it is at each handshake, as clients that follow the Secret do.
func reloadingTLSClient(dir, serverName string) *tls.Config {
	cfg := tlsClient(dir, serverName, true)
	cfg.InsecureSkipVerify = true // verified below, with the ca.crt of now
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
		if err != nil {
			return err
		}
		roots, inter := x509.NewCertPool(), x509.NewCertPool()
		roots.AppendCertsFromPEM(caPEM)
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err = cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: serverName})
		return err
	}
	return cfg
}

// ownedSecret waits for Secret name of the cache, which the Memcached controls.
func ownedSecret(ctx context.Context, key types.NamespacedName, name string) *corev1.Secret {
	GinkgoHelper()
	s := &corev1.Secret{}
	Eventually(func() error { return k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: name}, s) }, timeout, interval).Should(Succeed())
	Expect(metav1.GetControllerOf(s)).To(And(Not(BeNil()), HaveField("Kind", "Memcached"), HaveField("Name", key.Name)), name)
	return s
}
