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
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The OLM v1 specs install the committed bundle with what config/olmv1 ships (the namespace, the
// installer ServiceAccount and its RBAC, a ClusterCatalog and a ClusterExtension), as users do,
// on the OLM v1 that `make olmv1-install` built from source. Only the ClusterCatalog's image
// differs: the catalog of the local registry. The bundle's images are pulled through the node's
// mirror of quay.io and docker.io, by containerd and by OLM v1 alike.

const (
	extension        = "memcached-operator"
	installNamespace = "memcached-operator-system"
	installer        = "system:serviceaccount:" + installNamespace + ":memcached-operator-installer"
)

// applyOLMv1 applies config/olmv1 with the ClusterCatalog serving catalogImage and the
// ClusterExtension asking for version (a version or a range); patch, if set, is merged into the
// ClusterExtension's spec.
func applyOLMv1(version, patch string) {
	manifests := kubectl("kustomize", "config/olmv1")
	shipped := yamlValue(manifests, "ref: ")
	Expect(shipped).NotTo(BeEmpty(), "config/olmv1 names a catalog image")
	manifests = strings.Replace(manifests, "ref: "+shipped, "ref: "+catalogImage, 1)
	shippedVersion := yamlValue(manifests, "version: ")
	manifests = strings.Replace(manifests, "version: "+shippedVersion, "version: "+quote(version), 1)
	f := filepath.Join(GinkgoT().TempDir(), "olmv1.yaml")
	Expect(os.WriteFile(f, []byte(manifests), 0o644)).To(Succeed())
	kubectl("apply", "-f", f)
	if patch != "" {
		kubectl("patch", "clusterextension", extension, "--type=merge", "-p", `{"spec":`+patch+`}`)
	}
}

// yamlValue is the value of the first "key value" line of a YAML text.
func yamlValue(text, key string) string {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// extensionCondition is a condition of the ClusterExtension: "status/reason: message".
func extensionCondition(condition string) func() string {
	return func() string {
		out, _ := kubectlOut("get", "clusterextension", extension, "-o",
			fmt.Sprintf(`jsonpath={.status.conditions[?(@.type=="%s")].status}/{.status.conditions[?(@.type=="%[1]s")].reason}: {.status.conditions[?(@.type=="%[1]s")].message}`, condition))
		return out
	}
}

// installedVersion is the bundle version OLM v1 reports installed.
func installedVersion() string {
	out, _ := kubectlOut("get", "clusterextension", extension, "-o", "jsonpath={.status.install.bundle.version}")
	return out
}

// removeOLMv1 uninstalls in the order docs/olm.md gives: the CRs, while the operator still runs to
// remove their finalizers (else they hold the CRDs back, and the next install fails on CRDs being
// deleted), then the ClusterExtension; it waits until OLM v1 has removed the CRDs.
func removeOLMv1() {
	_, _ = kubectlOut("delete", "memcached,memcachedbackup", "--all-namespaces", "--all", "--ignore-not-found", "--timeout=3m")
	_, _ = kubectlOut("delete", "clusterextension", extension, "--ignore-not-found", "--timeout=3m")
	Eventually(crdNames, timeout, poll).ShouldNot(ContainSubstring("cache.my.domain"), "OLM v1 removes the CRDs with the ClusterExtension")
	_, _ = kubectlOut("delete", "clustercatalog", extension+"-catalog", "--ignore-not-found", "--timeout=2m")
	_, _ = kubectlOut("delete", "namespace", installNamespace, "--ignore-not-found", "--timeout=2m")
	_, _ = kubectlOut("delete", "clusterrolebinding,clusterrole", "memcached-operator-installer", "--ignore-not-found")
}

var _ = Describe("Through OLM v1", Ordered, Serial, func() {
	BeforeAll(func() {
		withoutOperator()
		upgradeEnv()
		// Nothing an earlier spec's OLM v0 install left: OLM v1 refuses to adopt objects it did
		// not install (docs/olm.md, "From OLM v0").
		removeOLMv0Leftovers()
	})
	AfterEach(removeOLMv1)

	It("installs with config/olmv1 (ClusterCatalog, ClusterExtension, the least-privilege installer), reconciles both samples, and uninstalls", func() {
		applyOLMv1(currentVersion, "")
		Eventually(extensionCondition("Installed"), 5*time.Minute, poll).Should(HavePrefix("True/"))
		Expect(installedVersion()).To(Equal(currentVersion))
		kubectl("-n", installNamespace, "rollout", "status", "deployment/"+operatorDeployment, "--timeout=3m")
		Expect(kubectl("-n", installNamespace, "get", "deployment", operatorDeployment, "-o",
			"jsonpath={.spec.template.metadata.annotations.olm\\.targetNamespaces}")).To(BeEmpty(), "installed for all namespaces")

		By("granting the installer what the bundle needs, and no more")
		for _, right := range [][]string{{"update", "customresourcedefinitions.apiextensions.k8s.io/memcacheds.cache.my.domain"},
			{"patch", "deployments.apps/" + operatorDeployment}} {
			Expect(canI(installer, installNamespace, right...)).To(BeTrue(), "the installer may %v", right)
		}
		for _, right := range [][]string{{"update", "customresourcedefinitions.apiextensions.k8s.io/clusterextensions.olm.operatorframework.io"},
			{"escalate", "clusterroles.rbac.authorization.k8s.io"}, {"bind", "clusterroles.rbac.authorization.k8s.io"}, {"create", "pods"}} {
			Expect(canI(installer, installNamespace, right...)).To(BeFalse(), "the installer may not %v", right)
		}

		ns := "memcached-olmv1"
		kubectl("create", "namespace", ns)
		DeferCleanup(deleteNamespace, ns)
		samplesReconcile(ns) // and deletes them: CRs go before the operator (docs/olm.md)

		By("deleting the ClusterExtension: OLM v1 removes the operator, its RBAC and its CRDs; the installer's objects stay")
		kubectl("delete", "clusterextension", extension, "--timeout=3m")
		Eventually(crdNames, timeout, poll).ShouldNot(ContainSubstring("cache.my.domain"))
		Eventually(func() string {
			out, _ := kubectlOut("-n", installNamespace, "get", "deployment,serviceaccount,service", "-o", "name")
			return out
		}, timeout, poll).ShouldNot(ContainSubstring("memcached-operator-controller-manager"))
		Expect(kubectl("get", "clusterrole,clusterrolebinding", "-l", "olm.operatorframework.io/owner-name="+extension, "-o", "name")).To(BeEmpty(),
			"the bundle's and the operator's ClusterRoles and bindings go")
		kubectl("-n", installNamespace, "get", "serviceaccount", "memcached-operator-installer")
	})

	DescribeTable("upgrades from the previous release without a failed request",
		func(ns string, target func() string) {
			applyOLMv1(previousVersion, "")
			Eventually(extensionCondition("Installed"), 5*time.Minute, poll).Should(HavePrefix("True/"))
			Expect(installedVersion()).To(Equal(previousVersion))
			kubectl("create", "namespace", ns)
			DeferCleanup(deleteNamespace, ns)
			createCRsOf(ns, previousVersion)
			uids := crUIDs(ns)
			p := startProbe(ns, "memcached-sample:11211")

			By("asking for " + target())
			applyOLMv1(target(), preflightFor(previousVersion))
			Eventually(installedVersion, 5*time.Minute, poll).Should(Equal(currentVersion))
			Eventually(extensionCondition("Progressing"), timeout, poll).Should(HavePrefix("True/Succeeded"))
			Expect(extensionCondition("Installed")()).To(HavePrefix("True/Succeeded"))
			expectOperandsMigrated(ns, uids)
			Expect(p.stop().Failures).To(BeZero(), "no client request fails during the upgrade")
		},
		Entry("by the ClusterExtension's version", "memcached-olmv1-version", func() string { return currentVersion }),
		// The catalog's graph (CatalogProvided, the default policy) leads from the previous
		// release to the channel's head.
		Entry("to the channel's head, by a version range", "memcached-olmv1-range", func() string { return ">=" + previousVersion }),
	)
})

// preflightFor is the ClusterExtension spec patch an upgrade from version needs: none, except from
// before 1.0.0, whose CRDs 1.0.0 tightens, and from 1.0.0, whose resource rules 1.1.0 rewrites to
// install on Kubernetes before 1.34 (docs/olm.md, tests/crd/upgrade_safety_test.go: from02, from10).
func preflightFor(version string) string {
	if strings.HasPrefix(version, "0.") || version == "1.0.0" {
		return `{"install":{"preflight":{"crdUpgradeSafety":{"enforcement":"None"}}}}`
	}
	return ""
}
