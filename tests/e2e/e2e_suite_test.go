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

// Package e2e drives the operator the way users do (make, kubectl) on a real cluster: the local
// cluster of `make test-e2e`, or any cluster KUBECONFIG points at with the images pushed.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

const (
	operatorNamespace  = "memcached-operator-system"
	operatorDeployment = "memcached-operator-controller-manager"
)

var (
	root string
	k8s  client.Client
	// Images pushed by `make e2e-images`.
	operatorImage, memcachedImage, probeImage, clientImage string
	// kustomizationBefore restores config/manager/kustomization.yaml, which `make deploy` edits.
	kustomizationBefore []byte
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "memcached-operator end-to-end suite")
}

// Process 1 keeps the kustomization as it is before any process can run make deploy (which edits
// it), to put it back at the end; every process then sets itself up.
var _ = SynchronizedBeforeSuite(func() {
	var err error
	kustomizationBefore, err = os.ReadFile(filepath.Join("..", "..", "config", "manager", "kustomization.yaml"))
	Expect(err).NotTo(HaveOccurred())
}, func() {
	var err error
	root, err = filepath.Abs(filepath.Join("..", ".."))
	Expect(err).NotTo(HaveOccurred())
	operatorImage, memcachedImage, probeImage = os.Getenv("E2E_IMG"), os.Getenv("E2E_MEMCACHED_IMG"), os.Getenv("E2E_PROBE_IMG")
	Expect(operatorImage).NotTo(BeEmpty(), "E2E_IMG names the operator image: run `make test-e2e`")
	Expect(memcachedImage).NotTo(BeEmpty(), "E2E_MEMCACHED_IMG names the memcached image")
	Expect(probeImage).NotTo(BeEmpty(), "E2E_PROBE_IMG names the memcache-probe image")
	clientImage = os.Getenv("E2E_CLIENT_IMG")
	Expect(clientImage).NotTo(BeEmpty(), "E2E_CLIENT_IMG names the memcache-client image")

	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(cachev1.AddToScheme(scheme)).To(Succeed())
	cfg, err := ctrl.GetConfig()
	Expect(err).NotTo(HaveOccurred())
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
})

// Once every process has ended: the operator of make deploy goes if it still runs (the spec that
// removes it failed or was not picked), and make deploy's edit of the kustomization is undone.
var _ = SynchronizedAfterSuite(func() {}, func() {
	if kustomizationBefore != nil {
		// Put back first: removing the operator can fail.
		Expect(os.WriteFile(filepath.Join(root, "config", "manager", "kustomization.yaml"), kustomizationBefore, 0o644)).To(Succeed())
	}
	if k8s != nil {
		withoutOperator()
	}
})

// On failure, show what the cluster looked like.
var _ = ReportAfterEach(func(report SpecReport) {
	if !report.Failed() {
		return
	}
	commands := [][]string{
		{"get", "pods,deployments,memcached,memcachedbackup,configmaps", "-A", "-o", "wide"},
		{"get", "events", "-A", "--sort-by=.lastTimestamp"},
		{"describe", "pods", "-n", e2eNamespace},
		// OLM v1: what it was asked for, what it says, and why.
		{"get", "clusterextensions,clustercatalogs", "-o", "yaml"},
		{"-n", "olmv1-system", "logs", "deployment/operator-controller-controller-manager", "--tail=100"},
		{"-n", "olmv1-system", "logs", "deployment/catalogd-controller-manager", "--tail=50"},
	}
	// The operator's logs wherever it runs (the OLM specs install it in namespaces of their own),
	// and those its containers wrote before their last restart.
	namespaces, _ := kubectlOut("get", "pods", "-A", "-l", "control-plane=controller-manager",
		"-o", `jsonpath={range .items[*]}{.metadata.namespace}{"\n"}{end}`)
	seen := map[string]bool{}
	for _, ns := range strings.Fields(namespaces) {
		if !seen[ns] {
			seen[ns] = true
			logs := []string{"-n", ns, "logs", "-l", "control-plane=controller-manager", "--tail=200", "--all-containers", "--prefix"}
			commands = append(commands, logs, append(logs, "--previous"))
		}
	}
	for _, args := range commands {
		out, _ := kubectlOut(args...)
		fmt.Fprintf(GinkgoWriter, "\n$ kubectl %s\n%s\n", strings.Join(args, " "), out)
	}
})

// deleteNamespace deletes ns the way docs/olm.md asks when the operator may run in it: the CRs
// first, while the operator still runs to uninstall their releases and remove their finalizers,
// then the namespace. Deleted together, the namespace's Role and RoleBinding can go before the
// operator has handled the CRs, and they stay Terminating (docs/troubleshooting.md).
func deleteNamespace(ns string) {
	_, _ = kubectlOut("-n", ns, "delete", "memcached,memcachedbackup", "--all", "--ignore-not-found", "--timeout=2m")
	_, _ = kubectlOut("delete", "namespace", ns, "--wait=false")
}

// crdNames lists the cluster's CRDs, "customresourcedefinition.apiextensions.k8s.io/NAME" a line.
func crdNames() string {
	out, _ := kubectlOut("get", "crd", "-o", "name")
	return out
}

// deleteCRDs deletes the operator's CRDs, which OLM v0 leaves behind, and waits until they are
// gone, so that the next install starts clean; CRs that still hold them are named on failure.
func deleteCRDs() {
	_, _ = kubectlOut("delete", "crd", "memcacheds.cache.my.domain", "memcachedbackups.cache.my.domain", "--ignore-not-found", "--wait=false")
	Eventually(crdNames, timeout, poll).ShouldNot(ContainSubstring("cache.my.domain"), func() string {
		out, _ := kubectlOut("get", "memcached,memcachedbackup", "-A", "-o", "custom-columns=NAMESPACE:.metadata.namespace,NAME:.metadata.name,FINALIZERS:.metadata.finalizers")
		return "CRs hold the CRDs back:\n" + out
	})
}

// removeOLMv0Leftovers removes what an OLM v0 install leaves behind once its operator is
// uninstalled, as docs/olm.md tells users to before they install through OLM v1 (which refuses
// to take over objects it did not make): the CRDs, and the bundle's own ClusterRoles (the
// editor, viewer and metrics-reader roles), which OLM v0 does not delete with the CSV.
func removeOLMv0Leftovers() {
	deleteCRDs()
	files, err := filepath.Glob(filepath.Join(root, "bundle", "manifests", "*_rbac.authorization.k8s.io_v1_clusterrole.yaml"))
	Expect(err).NotTo(HaveOccurred())
	Expect(files).NotTo(BeEmpty())
	for _, f := range files {
		name, _, _ := strings.Cut(filepath.Base(f), "_")
		_, _ = kubectlOut("delete", "clusterrole", name, "--ignore-not-found")
	}
}

// kubectlOut runs kubectl and returns its combined output.
func kubectlOut(args ...string) (string, error) {
	cmd := exec.Command("kubectl", args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// kubectl runs kubectl and fails the spec if it fails.
func kubectl(args ...string) string {
	out, err := kubectlOut(args...)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "kubectl %s:\n%s", strings.Join(args, " "), out)
	return out
}

// mustMake runs a make target of the project, as a user would.
func mustMake(args ...string) {
	cmd := exec.Command("make", append([]string{"--no-print-directory"}, args...)...)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	fmt.Fprintf(GinkgoWriter, "$ make %s\n%s", strings.Join(args, " "), out.String())
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "make %s failed:\n%s", strings.Join(args, " "), out.String())
}

func ctx() context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	DeferCleanup(cancel)
	return c
}
