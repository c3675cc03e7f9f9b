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
	"net/http"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart/loader"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/operand"
)

const (
	okdNamespace = "memcached-okd"
	// The namespace's UID range, as OKD annotates every namespace: "first/size".
	okdFirstUID = 1000680000
	okdUIDRange = "1000680000/10000"
)

// asOnOKD annotates and labels a namespace as OKD's carry them: the UID range the SCC assigns
// from (first: the emulation reads it once the label selects the namespace), Pod Security
// restricted enforced, and the restricted-v2 SCC (emulated here, selected by a label).
func asOnOKD(ns string) {
	kubectl("annotate", "namespace", ns, "--overwrite", "openshift.io/sa.scc.uid-range="+okdUIDRange, "openshift.io/sa.scc.supplemental-groups="+okdUIDRange)
	kubectl("label", "namespace", ns, "--overwrite", "pod-security.kubernetes.io/enforce=restricted", "e2e.memcached-operator/scc=restricted-v2")
}

// removeOKDEmulation deletes the emulation and waits until the SCC API has left discovery.
func removeOKDEmulation() {
	kubectl("delete", "-f", "tests/e2e/testdata/okd-restricted-v2.yaml", "--ignore-not-found", "--wait=true", "--timeout=2m")
	Eventually(func() (string, error) { return kubectlOut("api-versions") }, timeout, poll).ShouldNot(ContainSubstring("security.openshift.io"))
}

// The images the specs expect by digest: memcached's (the operator's RELATED_IMAGE_MEMCACHED)
// and the exporter's (RELATED_IMAGE_MEMCACHED_EXPORTER).
var memcachedRepository, memcachedDigest, exporterRepository, exporterDigest string

// registryDigest asks the local registry for the digest of repository:tag, as a user mirroring a
// release for a disconnected cluster reads it; mirrored repositories are under their path there
// (docker.io/prom/x is localhost:5000/prom/x).
func registryDigest(repository, tag string) string {
	path := repository
	for _, host := range []string{"localhost:5000/", "docker.io/", "quay.io/"} {
		path = strings.TrimPrefix(path, host)
	}
	req, err := http.NewRequestWithContext(ctx(), http.MethodHead, fmt.Sprintf("https://localhost:5000/v2/%s/manifests/%s", path, tag), nil)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.index.v1+json")
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	Expect(resp.StatusCode).To(Equal(http.StatusOK), "%s:%s in the local registry", repository, tag)
	digest := resp.Header.Get("Docker-Content-Digest")
	Expect(digest).To(HavePrefix("sha256:"))
	return digest
}

// OKD's restricted-v2 SCC, emulated on the local cluster (tests/e2e/testdata/okd-restricted-v2.yaml):
// security.openshift.io/v1 is served, pods get a UID from their namespace's range (at the pod
// level; the real SCC sets it per container) and pods with a UID outside it are refused, and the
// namespaces enforce the restricted Pod Security Standard. The operator's RELATED_IMAGE_*
// variables name the images by digest, as a disconnected install's mirror does.
var _ = Describe("On OKD's restricted-v2 SCC", Ordered, Serial, func() {
	BeforeAll(func() {
		withoutOperator()
		// Only where OKD is emulated, never on OKD itself, whose SCC API this would replace; a run
		// cut short may have left the emulation, which carries a marker.
		apis := kubectl("api-versions")
		if strings.Contains(apis, "security.openshift.io/v1") {
			marker, _ := kubectlOut("get", "crd", "securitycontextconstraints.security.openshift.io",
				"-o", `jsonpath={.metadata.labels.e2e\.memcached-operator/emulation}`)
			if marker != "true" {
				Skip("the cluster serves security.openshift.io/v1 itself: it is OpenShift, not a cluster to emulate it on")
			}
			removeOKDEmulation()
		}
		Expect(apis).To(ContainSubstring("admissionregistration.k8s.io/v1beta1"),
			"the local cluster serves MutatingAdmissionPolicy, with which restricted-v2 is emulated (hack/cluster/components.go)")

		By("serving security.openshift.io/v1 and assigning UIDs as restricted-v2 does")
		// Without this the next specs' operator would take the cluster for OKD.
		DeferCleanup(removeOKDEmulation)
		kubectl("apply", "-f", "tests/e2e/testdata/okd-restricted-v2.yaml")
		kubectl("wait", "crd/securitycontextconstraints.security.openshift.io", "--for=condition=Established", "--timeout=1m")

		By("deploying the operator, which reads the platform when it starts, in a namespace as OKD makes them, its images by digest")
		colon := strings.LastIndex(memcachedImage, ":")
		memcachedRepository = memcachedImage[:colon]
		memcachedDigest = registryDigest(memcachedRepository, memcachedImage[colon+1:])
		// The chart's exporter image, of which make e2e-images pushes a stand-in to the mirror.
		chrt, err := loader.Load(filepath.Join(root, "helm-charts", "memcached"))
		Expect(err).NotTo(HaveOccurred())
		exporter, err := operand.ChartExporterImage(chrt.Values)
		Expect(err).NotTo(HaveOccurred())
		exporterRepository = exporter.Repository
		exporterDigest = registryDigest(exporterRepository, exporter.Tag)
		DeferCleanup(func() { mustMake("undeploy") })
		mustMake("deploy", "IMG="+operatorImage, "MEMCACHED_IMG="+memcachedRepository+"@"+memcachedDigest)
		asOnOKD(operatorNamespace)
		// A changed template rolls the operator out again: the new pod gets the namespace's UID.
		kubectl("-n", operatorNamespace, "set", "env", "deployment/"+operatorDeployment,
			operand.ExporterRelatedImageEnv+"="+exporterRepository+"@"+exporterDigest)
		kubectl("-n", operatorNamespace, "rollout", "status", "deployment/"+operatorDeployment, "--timeout=3m")

		kubectl("create", "namespace", okdNamespace)
		DeferCleanup(deleteNamespace, okdNamespace)
		asOnOKD(okdNamespace)
	})

	It("refuses a pod with a fixed UID outside the namespace's range, as the chart would set one off OKD", func() {
		pod := probePod(okdNamespace, "fixed-uid")
		pod.Spec.SecurityContext.RunAsUser = ptr.To[int64](11211)
		err := k8s.Create(ctx(), pod)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("must be in the ranges: [1000680000, 1000689999]"))
	})

	It("runs the operator under the UID its namespace assigns", func() {
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(k8s.List(ctx(), pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"control-plane": "controller-manager"})).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(1))
			g.Expect(pods.Items[0].Spec.SecurityContext.RunAsUser).To(HaveValue(BeEquivalentTo(okdFirstUID)))
		}, timeout, poll).Should(Succeed())
	})

	It("runs both APIs' pods under the UID the namespace assigns, pulled by digest; memcached serves keys and the exporter reports", func() {
		Expect(k8s.Create(ctx(), &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: okdNamespace, Name: mcName},
			Spec: cachev1.MemcachedSpec{ReplicaCount: ptr.To[int32](1), Metrics: &cachev1.MetricsSpec{Enabled: ptr.To(true)}}})).To(Succeed())
		Expect(k8s.Create(ctx(), &cachev1.MemcachedBackup{ObjectMeta: metav1.ObjectMeta{Namespace: okdNamespace, Name: backupName},
			Spec: cachev1.MemcachedBackupSpec{Size: 1}})).To(Succeed())
		kubectl("-n", okdNamespace, "wait", "memcached/"+mcName, "--for=condition=Deployed", "--timeout=3m")
		kubectl("-n", okdNamespace, "wait", "memcachedbackup/"+backupName, "--for=condition=Available", "--timeout=3m")

		By("leaving the UID to the SCC in the StatefulSet and the Deployment, as on OKD")
		for name, template := range podTemplates(okdNamespace) {
			Expect(template.Spec.SecurityContext.RunAsUser).To(BeNil(), "%s fixes the pod's UID", name)
			for _, c := range template.Spec.Containers {
				Expect(c.SecurityContext == nil || c.SecurityContext.RunAsUser == nil).To(BeTrue(), "%s fixes container %s's UID", name, c.Name)
			}
		}

		By("running every pod ready, with the namespace's UID, the images by digest")
		for selector, containers := range map[string]int{
			"app.kubernetes.io/instance=" + mcName:     2, // memcached and the exporter
			"app.kubernetes.io/instance=" + backupName: 1,
		} {
			Eventually(func(g Gomega) {
				pods := &corev1.PodList{}
				sel, err := metav1.ParseToLabelSelector(selector)
				g.Expect(err).NotTo(HaveOccurred())
				ls, err := metav1.LabelSelectorAsSelector(sel)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(k8s.List(ctx(), pods, client.InNamespace(okdNamespace), client.MatchingLabelsSelector{Selector: ls})).To(Succeed())
				g.Expect(pods.Items).To(HaveLen(1))
				p := pods.Items[0]
				g.Expect(p.Spec.SecurityContext.RunAsUser).To(HaveValue(BeEquivalentTo(okdFirstUID)))
				g.Expect(p.Status.ContainerStatuses).To(HaveLen(containers))
				for _, cs := range p.Status.ContainerStatuses {
					g.Expect(cs.Ready).To(BeTrue(), "pod %s container %s", p.Name, cs.Name)
				}
			}, timeout, poll).Should(Succeed(), selector)
		}
		By("naming every image by digest, from the operator's RELATED_IMAGE_* variables")
		images := map[string]string{}
		for name, template := range podTemplates(okdNamespace) {
			for _, c := range template.Spec.Containers {
				images[name+"/"+c.Name] = c.Image
			}
		}
		Expect(images).To(Equal(map[string]string{
			mcName + "/memcached":     memcachedRepository + "@" + memcachedDigest,
			mcName + "/exporter":      exporterRepository + "@" + exporterDigest,
			backupName + "/memcached": memcachedRepository + "@" + memcachedDigest,
		}))

		By("storing and reading keys through the Service")
		// A pod just ready is routed once kube-proxy has synced its endpoint: the probe waits for
		// a first served request before it counts.
		res := probeResultIn(okdNamespace, "probe", "-addr", fmt.Sprintf("%s.%s.svc.cluster.local:11211", mcName, okdNamespace), "-keys", "50", "-wait-ready", "1m")
		Expect(res["requests"]).To(BeEquivalentTo(50))
		Expect(res["failures"]).To(BeEquivalentTo(0))

		By("scraping the exporter, which reaches memcached")
		Eventually(func(g Gomega) string {
			pods := &corev1.PodList{}
			g.Expect(k8s.List(ctx(), pods, client.InNamespace(okdNamespace), client.MatchingLabels{"app.kubernetes.io/instance": mcName})).To(Succeed())
			var live []string
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil {
					live = append(live, p.Name)
				}
			}
			g.Expect(live).To(HaveLen(1))
			out, _ := kubectlOut("get", "--raw", exporterMetrics(okdNamespace, live[0]))
			return out
		}, timeout, poll).Should(MatchRegexp(`(?m)^memcached_up 1$`))
	})
})

// podTemplates are the pod templates of the samples in ns: the Memcached's StatefulSet and the
// MemcachedBackup's Deployment, by their names.
func podTemplates(ns string) map[string]corev1.PodTemplateSpec {
	GinkgoHelper()
	servers := &appsv1.StatefulSet{}
	Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: ns, Name: mcName}, servers)).To(Succeed())
	deploy := &appsv1.Deployment{}
	Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: ns, Name: backupName}, deploy)).To(Succeed())
	return map[string]corev1.PodTemplateSpec{mcName: servers.Spec.Template, backupName: deploy.Spec.Template}
}
