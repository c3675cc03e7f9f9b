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
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The OLM specs install the committed bundle unchanged, the way users do: with `operator-sdk run
// bundle`, from the catalog through a Subscription, and score it with `operator-sdk scorecard`.
// `make test-e2e` installs OLM (built from source), pushes the bundle and a catalog of it to the
// local registry and pushes the bundle's images there too, which the node uses as a mirror of
// quay.io; the memcached image is replaced through RELATED_IMAGE_MEMCACHED, as a disconnected
// install does.

var (
	operatorSDK, bundleImage, catalogImage, indexImage, busyboxImage string
	// csvName is the CSV of this tree's release (E2E_VERSION).
	csvName string
)

func olmEnv() {
	operatorSDK = filepath.Join(root, "bin", "operator-sdk")
	bundleImage, catalogImage = os.Getenv("E2E_BUNDLE_IMG"), os.Getenv("E2E_CATALOG_IMG")
	indexImage, busyboxImage = os.Getenv("E2E_INDEX_IMG"), os.Getenv("E2E_BUSYBOX_IMG")
	csvName = "memcached-operator.v" + os.Getenv("E2E_VERSION")
	for name, v := range map[string]string{"E2E_BUNDLE_IMG": bundleImage, "E2E_CATALOG_IMG": catalogImage, "E2E_INDEX_IMG": indexImage,
		"E2E_BUSYBOX_IMG": busyboxImage, "E2E_VERSION": os.Getenv("E2E_VERSION")} {
		Expect(v).NotTo(BeEmpty(), "%s is set by `make test-e2e`", name)
	}
}

// sdk runs operator-sdk and returns its output.
func sdk(args ...string) string {
	cmd := exec.Command(operatorSDK, args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	fmt.Fprintf(GinkgoWriter, "$ operator-sdk %s\n%s", strings.Join(args, " "), out)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "operator-sdk %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

func csvPhase(ns, csv string) func() string {
	return func() string {
		out, _ := kubectlOut("-n", ns, "get", "csv", csv, "-o", "jsonpath={.status.phase}")
		return out
	}
}

// subscription is what an administrator applies to install the operator from the catalog image.
type subscription struct {
	targetNamespaces []string // nil: AllNamespaces
	approval         string   // Automatic or Manual
	startingCSV      string   // optional
	relatedImage     string   // optional RELATED_IMAGE_MEMCACHED in the Subscription's config
}

// subscribe applies a CatalogSource of the catalog image, an OperatorGroup and a Subscription in ns.
func subscribe(ns string, s subscription) {
	group := "spec: {}"
	if s.targetNamespaces != nil {
		targets, _ := json.Marshal(s.targetNamespaces)
		group = fmt.Sprintf("spec: {targetNamespaces: %s}", targets)
	}
	manifest := fmt.Sprintf(`apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata: {name: memcached-catalog, namespace: %[1]s}
spec:
  sourceType: grpc
  image: %[2]s
  displayName: memcached-operator
  publisher: memcached-operator maintainers
  grpcPodConfig: {securityContextConfig: restricted}
---
apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata: {name: memcached, namespace: %[1]s}
%[3]s
---
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata: {name: memcached-operator, namespace: %[1]s}
spec:
  channel: stable
  name: memcached-operator
  source: memcached-catalog
  sourceNamespace: %[1]s
  installPlanApproval: %[4]s
`, ns, catalogImage, group, s.approval)
	if s.startingCSV != "" {
		manifest += fmt.Sprintf("  startingCSV: %s\n", s.startingCSV)
	}
	if s.relatedImage != "" {
		manifest += fmt.Sprintf("  config:\n    env:\n    - {name: RELATED_IMAGE_MEMCACHED, value: %s}\n", s.relatedImage)
	}
	f := filepath.Join(GinkgoT().TempDir(), "install.yaml")
	Expect(os.WriteFile(f, []byte(manifest), 0o644)).To(Succeed())
	kubectl("apply", "-f", f)
}

// mirrorMemcached points the operator installed by a Subscription at the local memcached image.
func mirrorMemcached(ns string) {
	sub := strings.TrimSpace(kubectl("-n", ns, "get", "subscription", "-o", "name"))
	kubectl("-n", ns, "patch", sub, "--type=merge", "-p",
		fmt.Sprintf(`{"spec":{"config":{"env":[{"name":"RELATED_IMAGE_MEMCACHED","value":%q}]}}}`, memcachedImage))
	Eventually(func() string {
		return kubectl("-n", ns, "get", "deployment", "memcached-operator-controller-manager", "-o", "jsonpath={.spec.template.spec.containers[0].env}")
	}, timeout, poll).Should(ContainSubstring(memcachedImage))
	kubectl("-n", ns, "rollout", "status", "deployment/memcached-operator-controller-manager", "--timeout=3m")
}

// expectPinnedOperator checks that the operator in ns runs the image its CSV pins by digest, pulled
// through the mirror of quay.io, whose repository has no tag for that digest: a disconnected
// cluster's mirror (ImageDigestMirrorSet) serves by digest only.
func expectPinnedOperator(ns string) {
	pinned := kubectl("-n", ns, "get", "csv", csvName, "-o", "jsonpath={.metadata.annotations.containerImage}")
	repository, digest, byDigest := strings.Cut(pinned, "@")
	ExpectWithOffset(1, byDigest).To(BeTrue(), "the CSV names the operator image %q by digest", pinned)
	ExpectWithOffset(1, kubectl("-n", ns, "get", "deployment", "memcached-operator-controller-manager", "-o",
		"jsonpath={.spec.template.spec.containers[0].image}")).To(Equal(pinned))
	// The pinned image is an index of linux/amd64 and linux/arm64. The node names what it runs by
	// the index's digest, or by the digest of its platform's image when it already held that image
	// under another name (the end-to-end tests' own operator image is the same amd64 image).
	pinnedImages := imageDigests(repository, digest)
	EventuallyWithOffset(1, func() string {
		id := kubectl("-n", ns, "get", "pods", "-l", "control-plane=controller-manager", "-o",
			"jsonpath={.items[*].status.containerStatuses[0].imageID}")
		_, running, _ := strings.Cut(id, "@")
		return running
	}, timeout, poll).Should(BeElementOf(pinnedImages), "the operator pod runs the pinned image")
	for _, tag := range registryTags(repository) {
		ExpectWithOffset(1, registryDigest(repository, tag)).NotTo(Equal(digest), "tag %s of %s names the pinned image", tag, repository)
	}
}

// imageDigests is digest, a manifest of repository in the local registry, and, when it is an index,
// the digests of its images.
func imageDigests(repository, digest string) []string {
	path := strings.TrimPrefix(repository, "quay.io/")
	req, err := http.NewRequestWithContext(ctx(), http.MethodGet, "https://localhost:5000/v2/"+path+"/manifests/"+digest, nil)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Accept", "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json")
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	Expect(resp.StatusCode).To(Equal(http.StatusOK), "%s@%s in the local registry", repository, digest)
	var index struct {
		Manifests []struct {
			Digest string `json:"digest"`
		} `json:"manifests"`
	}
	Expect(json.NewDecoder(resp.Body).Decode(&index)).To(Succeed())
	digests := []string{digest}
	for _, m := range index.Manifests {
		digests = append(digests, m.Digest)
	}
	return digests
}

// registryTags lists the tags of a repository of the local registry (quay.io/x is localhost:5000/x).
func registryTags(repository string) []string {
	path := strings.TrimPrefix(repository, "quay.io/")
	req, err := http.NewRequestWithContext(ctx(), http.MethodGet, "https://localhost:5000/v2/"+path+"/tags/list", nil)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	Expect(resp.StatusCode).To(Equal(http.StatusOK), "the tags of %s in the local registry", repository)
	var list struct {
		Tags []string `json:"tags"`
	}
	Expect(json.NewDecoder(resp.Body).Decode(&list)).To(Succeed())
	return list.Tags
}

// canI says whether user may do verb on resource in ns (kubectl auth can-i).
func canI(user, ns string, verbResource ...string) bool {
	// Its answer on stdout; warnings (a cluster-scoped resource asked in a namespace) on stderr.
	out, _ := exec.Command("kubectl", append([]string{"auth", "can-i", "-n", ns, "--as", user}, verbResource...)...).Output()
	return strings.TrimSpace(string(out)) == "yes"
}

// samplesReconcile applies both samples in ns and waits for their pods.
func samplesReconcile(ns string) {
	kubectl("-n", ns, "apply", "-f", "config/samples/cache_v1_memcached.yaml", "-f", "config/samples/cache_v1_memcachedbackup.yaml")
	kubectl("-n", ns, "wait", "memcached/memcached-sample", "--for=condition=Deployed", "--timeout=3m")
	kubectl("-n", ns, "wait", "memcachedbackup/memcachedbackup-sample", "--for=condition=Available", "--timeout=3m")
	Eventually(func() string {
		return kubectl("-n", ns, "get", "statefulset", "memcached-sample", "-o", "jsonpath={.status.readyReplicas}")
	}, timeout, poll).Should(Equal("3"))
	kubectl("-n", ns, "delete", "-f", "config/samples/cache_v1_memcached.yaml", "-f", "config/samples/cache_v1_memcachedbackup.yaml", "--timeout=2m")
}

var _ = Describe("Through OLM", Ordered, Serial, func() {
	BeforeAll(func() {
		withoutOperator()
		olmEnv()
	})
	// OLM v0 leaves the CRDs and the bundle's ClusterRoles of an uninstalled operator; remove
	// them so other specs start clean.
	AfterAll(removeOLMv0Leftovers)

	It("installs with operator-sdk run bundle, reconciles both samples, passes every scorecard test (basic, olm and the project's own) against the live cluster, and operator-sdk cleanup removes it", func() {
		ns := "memcached-run-bundle"
		kubectl("create", "namespace", ns)
		DeferCleanup(deleteNamespace, ns)
		sdk("run", "bundle", bundleImage, "-n", ns, "--index-image", indexImage, "--decompression-image", busyboxImage,
			"--install-mode", "OwnNamespace", "--timeout", "5m")
		Expect(csvPhase(ns, csvName)()).To(Equal("Succeeded"))
		mirrorMemcached(ns)
		samplesReconcile(ns)

		By("running every scorecard test against the operator OLM runs")
		// As users run it (docs/olm.md), with the local registry's busybox for its helper pods.
		cmd := exec.Command("make", "-s", "--no-print-directory", "scorecard", "SCORECARD_NAMESPACE="+ns,
			"SCORECARD_FLAGS=-u "+busyboxImage+" -b "+busyboxImage+" -w 5m -o json")
		cmd.Dir = root
		out, err := cmd.Output()
		fmt.Fprintf(GinkgoWriter, "$ make scorecard SCORECARD_NAMESPACE=%s ...\n%s\n", ns, out)
		Expect(err).NotTo(HaveOccurred(), "make scorecard failed:\n%s", out)
		Expect(bytes.IndexByte(out, '{')).NotTo(Equal(-1), "scorecard's JSON, after kubectl's lines")
		out = out[bytes.IndexByte(out, '{'):]
		var list struct {
			Items []struct {
				Status struct {
					Results []struct {
						Name   string   `json:"name"`
						State  string   `json:"state"`
						Errors []string `json:"errors"`
					} `json:"results"`
				} `json:"status"`
			} `json:"items"`
		}
		Expect(json.Unmarshal(out, &list)).To(Succeed())
		states := map[string]string{}
		for _, item := range list.Items {
			for _, r := range item.Status.Results {
				states[r.Name] = r.State
				Expect(r.State).To(Equal("pass"), "scorecard test %s: %v", r.Name, r.Errors)
			}
		}
		Expect(states).To(HaveLen(8), "basic-check-spec, 5 olm tests and the 2 tests of the project")
		Expect(states).To(HaveKey("memcached-deployed"))
		Expect(states).To(HaveKey("memcachedbackup-reports-pods"))

		sdk("cleanup", "memcached-operator", "-n", ns, "--timeout", "3m")
		Eventually(func() string {
			out, _ := kubectlOut("-n", ns, "get", "csv,subscription,catalogsource,deployment", "-o", "name")
			return out
		}, timeout, poll).Should(BeEmpty())
	})

	DescribeTable("installs from the catalog through a CatalogSource, OperatorGroup and Subscription, with the rights of its install mode",
		func(ns string, targetNamespaces []string, workNamespace string) {
			kubectl("create", "namespace", ns)
			DeferCleanup(deleteNamespace, ns)
			if workNamespace != ns {
				kubectl("create", "namespace", workNamespace)
				DeferCleanup(deleteNamespace, workNamespace)
			}
			subscribe(ns, subscription{targetNamespaces: targetNamespaces, approval: "Automatic", relatedImage: memcachedImage})

			Eventually(csvPhase(ns, csvName), timeout, poll).Should(Equal("Succeeded"))
			Expect(kubectl("-n", ns, "get", "deployment", "memcached-operator-controller-manager", "-o",
				"jsonpath={.spec.template.metadata.annotations.olm\\.targetNamespaces}")).To(Equal(strings.Join(targetNamespaces, ",")))
			expectPinnedOperator(ns)

			By("granting the operator rights where it watches, and nowhere else")
			sa := "system:serviceaccount:" + ns + ":memcached-operator-controller-manager"
			for _, right := range [][]string{{"get", "secrets"}, {"create", "deployments.apps"}, {"create", "serviceaccounts"}, {"update", "memcacheds.cache.my.domain"}} {
				Expect(canI(sa, workNamespace, right...)).To(BeTrue(), "%s may %v in %s, which it watches", sa, right, workNamespace)
				Expect(canI(sa, "default", right...)).To(Equal(targetNamespaces == nil),
					"%s may %v in another namespace only when it watches all", sa, right)
			}
			samplesReconcile(workNamespace)

			kubectl("-n", ns, "delete", "subscription", "memcached-operator")
			kubectl("-n", ns, "delete", "csv", csvName, "--timeout=2m")
			Eventually(func() string {
				out, _ := kubectlOut("-n", ns, "get", "deployment", "-o", "name")
				return out
			}, timeout, poll).ShouldNot(ContainSubstring("memcached-operator"))
		},
		Entry("in OwnNamespace mode", "memcached-own", []string{"memcached-own"}, "memcached-own"),
		Entry("in AllNamespaces mode", "memcached-all", nil, "memcached-anywhere"),
	)

})
