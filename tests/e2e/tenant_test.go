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
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// proveTenantCannotReachOut is the attack of docs/security.md's threat model on the real cluster,
// by a ServiceAccount that has only the edit role (and the Memcached editor role) in its own
// namespace: it forges Helm release records of its Memcacheds that name a Deployment of another
// namespace and a Secret in kube-system, then upgrades and deletes those Memcacheds. Both objects
// survive, the Memcacheds say why, and deleting the forged records lets both go on.
func proveTenantCannotReachOut() {
	const tenant, other = "memcached-tenant-a", "memcached-tenant-b"
	as := "--as=system:serviceaccount:" + tenant + ":editor"
	for _, ns := range []string{tenant, other} {
		kubectl("create", "namespace", ns)
		DeferCleanup(deleteNamespace, ns)
	}
	kubectl("-n", tenant, "create", "serviceaccount", "editor")
	kubectl("-n", tenant, "create", "rolebinding", "editor", "--clusterrole=edit", "--serviceaccount="+tenant+":editor")
	kubectl("-n", tenant, "create", "rolebinding", "memcached-editor", "--clusterrole=memcached-operator-memcached-editor-role", "--serviceaccount="+tenant+":editor")
	Expect(kubectl(as, "auth", "can-i", "create", "secrets", "-n", tenant)).To(ContainSubstring("yes"))
	out, _ := kubectlOut(as, "auth", "can-i", "delete", "secrets", "-n", metav1.NamespaceSystem)
	Expect(out).To(ContainSubstring("no"), "the tenant itself cannot touch kube-system")

	By("the cluster's admin: a Deployment in another namespace and a Secret in kube-system")
	kubectl("-n", other, "create", "deployment", "victim", "--image="+memcachedImage, "--replicas=0")
	kubectl("-n", metav1.NamespaceSystem, "create", "secret", "generic", "memcached-e2e-canary", "--from-literal=k=v")
	DeferCleanup(kubectlOut, "-n", metav1.NamespaceSystem, "delete", "secret", "memcached-e2e-canary", "--ignore-not-found")
	uid := func(args ...string) string { return kubectl(append(args, "-o", "jsonpath={.metadata.uid}")...) }
	victimUID := uid("-n", other, "get", "deployment", "victim")
	canaryUID := uid("-n", metav1.NamespaceSystem, "get", "secret", "memcached-e2e-canary")
	survive := func() {
		GinkgoHelper()
		Consistently(func(g Gomega) {
			g.Expect(kubectlOut("-n", other, "get", "deployment", "victim", "-o", "jsonpath={.metadata.uid}")).To(Equal(victimUID))
			g.Expect(kubectlOut("-n", metav1.NamespaceSystem, "get", "secret", "memcached-e2e-canary", "-o", "jsonpath={.metadata.uid}")).To(Equal(canaryUID))
		}, 10*time.Second, poll).Should(Succeed(), "the other namespace's Deployment and the kube-system Secret survive")
	}

	By("the tenant: two Memcacheds, then forged release records of them")
	for _, name := range []string{"mc", "mc3"} {
		kubectlIn(fmt.Sprintf("apiVersion: cache.my.domain/v1\nkind: Memcached\nmetadata:\n  name: %s\nspec:\n  replicaCount: 1\n", name), as, "-n", tenant, "create", "-f", "-")
	}
	for _, name := range []string{"mc", "mc3"} {
		kubectl("-n", tenant, "wait", "memcached/"+name, "--for=condition=Deployed", "--timeout=3m")
	}
	forge := func(name, manifest string) string {
		secret := "sh.helm.release.v1." + name + ".v2"
		kubectlIn(forgedRecord(tenant, name, secret, manifest), as, "-n", tenant, "create", "-f", "-")
		return secret
	}
	upgradeFrom := forge("mc", fmt.Sprintf("---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: victim\n  namespace: %s\n", other))
	uninstallFrom := forge("mc3", "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: memcached-e2e-canary\n  namespace: kube-system\n")
	refused := func(name, condition, secret string) {
		GinkgoHelper()
		Eventually(func(g Gomega) cachev1.HelmCondition {
			return memcachedConditionOf(g, types.NamespacedName{Namespace: tenant, Name: name}, condition)
		}, timeout, poll).Should(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "ReleaseRecordRefused"),
			HaveField("Message", ContainSubstring("release record Secret %s/%s is not used", tenant, secret))))
		Eventually(eventReasonsOf(tenant, name), timeout, poll).Should(ContainElement("ReleaseRecordRefused"))
	}

	By("the upgrade path: the tenant changes mc")
	kubectl(as, "-n", tenant, "patch", "memcached", "mc", "--type=merge", "-p", `{"spec":{"replicaCount":2}}`)
	refused("mc", "Irreconcilable", upgradeFrom)
	By("the uninstall path: the tenant deletes mc3, once the operator has seen its forged record")
	refused("mc3", "Irreconcilable", uninstallFrom)
	kubectl(as, "-n", tenant, "delete", "memcached", "mc3", "--wait=false")
	refused("mc3", "ReleaseFailed", uninstallFrom)
	survive()

	By("the way out the Memcacheds name: the tenant deletes the forged records")
	kubectl(as, "-n", tenant, "delete", "secret", upgradeFrom, uninstallFrom)
	kubectl("-n", tenant, "wait", "memcached/mc", "--for=jsonpath={.status.readyReplicas}=2", "--timeout=3m")
	Eventually(releaseGone(tenant, "mc3"), timeout, poll).Should(Succeed())
	survive()
}

// forgedRecord is a Secret shaped and labelled as the operator's release record of the Memcached
// name, revision 2, deployed, whose manifest is manifest: what a tenant who may write Secrets can
// write (Helm's encoding: base64 of gzipped JSON).
func forgedRecord(ns, name, secret, manifest string) string {
	rel, err := json.Marshal(map[string]any{"name": name, "namespace": ns, "version": 2, "manifest": manifest,
		"info":  map[string]any{"status": "deployed", "description": "forged"},
		"chart": map[string]any{"metadata": map[string]any{"name": "memcached", "version": "1.1.0"}}, "config": map[string]any{}})
	Expect(err).NotTo(HaveOccurred())
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, err = w.Write(rel)
	Expect(err).NotTo(HaveOccurred())
	Expect(w.Close()).To(Succeed())
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
type: helm.sh/release.v1
metadata:
  name: %s
  labels: {owner: helm, name: %s, status: deployed, version: "2", cache.my.domain/operator: memcached-operator}
stringData:
  release: %s
`, secret, name, base64.StdEncoding.EncodeToString(gz.Bytes()))
}

// kubectlIn runs kubectl with input on its standard input and fails the spec if it fails.
func kubectlIn(input string, args ...string) string {
	cmd := exec.Command("kubectl", args...)
	cmd.Dir = root
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.CombinedOutput()
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "kubectl %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}
