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
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Masterminds/semver/v3"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// The upgrade specs start from an earlier release (the one before this tree's, and the oldest,
// which the catalog's skipRange leads from straight to this one), rebuilt from the commit
// releases.yaml records for it (`make e2e-release-images`), with live operands and a client probing memcached
// through its Service the whole time, and upgrade to this tree's release through OLM. The memcached
// images each release pins (docker.io/library/memcached:<version>) are stand-ins in the local
// mirror: this machine cannot pull them, so they run Debian's memcached under those names.

var oldestVersion, previousVersion, currentVersion, previousBundleImage string

func upgradeEnv() {
	olmEnv()
	oldestVersion, previousVersion, currentVersion = os.Getenv("E2E_OLDEST_VERSION"), os.Getenv("E2E_PREVIOUS_VERSION"), os.Getenv("E2E_VERSION")
	previousBundleImage = os.Getenv("E2E_PREVIOUS_BUNDLE_IMG")
	Expect(oldestVersion).NotTo(BeEmpty(), "E2E_OLDEST_VERSION is set by `make test-e2e`")
	Expect(previousVersion).NotTo(BeEmpty(), "E2E_PREVIOUS_VERSION is set by `make test-e2e`")
	Expect(currentVersion).NotTo(BeEmpty(), "E2E_VERSION is set by `make test-e2e`")
	Expect(previousBundleImage).NotTo(BeEmpty(), "E2E_PREVIOUS_BUNDLE_IMG is set by `make test-e2e`")
}

func csvOf(version string) string { return "memcached-operator.v" + version }

// approveInstallPlan approves the InstallPlan that installs version, as an administrator does
// for a Subscription with Manual approval.
func approveInstallPlan(ns, version string) {
	var plan string
	Eventually(func() string {
		out, _ := kubectlOut("-n", ns, "get", "installplan", "-o",
			`jsonpath={range .items[*]}{.metadata.name}={.spec.clusterServiceVersionNames[*]}={.spec.approved}{"\n"}{end}`)
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Split(line, "="); len(f) == 3 && strings.Contains(f[1], csvOf(version)) {
				plan = f[0]
				return f[2]
			}
		}
		return ""
	}, timeout, poll).ShouldNot(BeEmpty(), "an InstallPlan for %s", csvOf(version))
	kubectl("-n", ns, "patch", "installplan", plan, "--type=merge", "-p", `{"spec":{"approved":true}}`)
}

// createCRsOf creates a Memcached and a MemcachedBackup the way users of release version wrote
// them (memoryLimitMB: the 0.1.0 name of maxMemoryMB), and waits for their pods.
func createCRsOf(ns, version string) {
	memory := "maxMemoryMB"
	if version == "0.1.0" {
		memory = "memoryLimitMB"
	}
	manifest := `apiVersion: cache.my.domain/v1
kind: Memcached
metadata: {name: memcached-sample}
spec:
  replicaCount: 3
  memcached: {` + memory + `: 96}
---
apiVersion: cache.my.domain/v1
kind: MemcachedBackup
metadata: {name: memcachedbackup-sample}
spec: {size: 2}
`
	f := filepath.Join(GinkgoT().TempDir(), "crs.yaml")
	Expect(os.WriteFile(f, []byte(manifest), 0o644)).To(Succeed())
	kubectl("-n", ns, "apply", "-f", f)
	// Before the namespace goes: its operator must remove the Memcached's finalizer, and a CR
	// left behind would block the deletion of the CRDs.
	DeferCleanup(func() {
		_, _ = kubectlOut("-n", ns, "delete", "memcached,memcachedbackup", "--all", "--ignore-not-found", "--timeout=2m")
	})
	kubectl("-n", ns, "wait", "memcached/memcached-sample", "--for=condition=Deployed", "--timeout=3m")
	kubectl("-n", ns, "wait", "memcachedbackup/memcachedbackup-sample", "--for=condition=Available", "--timeout=3m")
	kind := "deployment"
	if runsServers(version) {
		kind = "statefulset"
	}
	Eventually(func() string {
		return kubectl("-n", ns, "get", kind, "memcached-sample", "-o", "jsonpath={.status.readyReplicas}")
	}, timeout, poll).Should(Equal("3"))
}

// runsServers says whether release version runs memcached as a StatefulSet of servers, each
// with a stable name that status.servers lists (1.2.0 on), not a Deployment.
func runsServers(version string) bool {
	return semver.MustParse(version).Compare(semver.MustParse("1.2.0")) >= 0
}

// liveProbe is memcache-probe running in a pod until stopped: it stores and reads a key through
// the Service every 50 ms, each time on a new connection (so it meets every pod).
type liveProbe struct{ ns, name string }

func startProbe(ns, addr string) *liveProbe { return startProbeNamed(ns, "upgrade-probe", addr) }

// startProbeNamed is startProbe with a pod name of its own, for a second probe in a namespace
// (the first lingers to report).
func startProbeNamed(ns, name, addr string) *liveProbe {
	p := &liveProbe{ns: ns, name: name}
	pod := probePod(ns, p.name, "-addr", addr, "-interval", "50ms", "-linger", "45s", "-wait-ready", "2m")
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](60) // the linger, to read its report
	Expect(k8s.Create(ctx(), pod)).To(Succeed())
	Eventually(func(g Gomega) corev1.PodPhase {
		g.Expect(k8s.Get(ctx(), client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		return pod.Status.Phase
	}, timeout, poll).Should(Equal(corev1.PodRunning))
	// Counting starts once the Service routes: a new Service works only when kube-proxy has
	// synced it, which is no part of an upgrade.
	Eventually(func() string {
		logs, _ := kubectlOut("-n", ns, "logs", p.name)
		return logs
	}, timeout, poll).Should(ContainSubstring("first request served; probing"), "memcache-probe reaches memcached through the Service")
	return p
}

type probeResult struct {
	Requests   int     `json:"requests"`
	Failures   int     `json:"failures"`
	LongestGap float64 `json:"longestGapSeconds"`
	FirstError string  `json:"firstError"`
}

// stop ends the probe (SIGTERM), reads its report and reports it.
func (p *liveProbe) stop() probeResult {
	kubectl("-n", p.ns, "delete", "pod", p.name, "--wait=false")
	var res probeResult
	var logs string
	Eventually(func(g Gomega) {
		logs, _ = kubectlOut("-n", p.ns, "logs", p.name)
		lines := strings.Split(strings.TrimSpace(logs), "\n")
		g.Expect(json.Unmarshal([]byte(lines[len(lines)-1]), &res)).To(Succeed())
	}, time.Minute, poll).Should(Succeed())
	fmt.Fprintf(GinkgoWriter, "memcache-probe through the Service during the upgrade: %d requests, %d failed, longest gap %.2fs\n%s\n",
		res.Requests, res.Failures, res.LongestGap, logs)
	AddReportEntry("memcache-probe during the upgrade", fmt.Sprintf("%d requests, %d failed, longest gap without a successful request %.2fs",
		res.Requests, res.Failures, res.LongestGap))
	return res
}

// expectMigrated checks what an upgrade through OLM v0 from release from to the current release
// leaves: the new CSV alone, the operands on the new chart and memcached version, every pod a
// server of the new StatefulSet, the CRs the same objects with their spec moved to the new names; with
// events, the Events that say so. (An operator killed mid-upgrade may die with Events recorded but
// not yet sent.)
func expectMigrated(ns, from string, uids map[string]types.UID, events bool) {
	Eventually(csvPhase(ns, csvOf(currentVersion)), timeout, poll).Should(Equal("Succeeded"))
	Eventually(func() string {
		out, _ := kubectlOut("-n", ns, "get", "csv", "-o", "name")
		return out
	}, timeout, poll).ShouldNot(ContainSubstring(csvOf(from)), "the new CSV replaces the old one")
	expectOperandsMigrated(ns, uids)
	if events {
		Eventually(func() []string {
			return strings.Fields(kubectl("-n", ns, "get", "events", "--field-selector", "involvedObject.name=memcached-sample", "-o", "jsonpath={.items[*].reason}"))
		}, timeout, poll).Should(ContainElements(migrationEvents(from)))
	}
}

// migrationEvents are the reasons of the Events an upgrade from release from records on a
// Memcached: the chart's new version; from a release before 1.2.0 the Deployment replaced by the
// StatefulSet of servers and its pods retired one by one; from 0.1.0 also the spec's renamed
// fields.
func migrationEvents(from string) []string {
	switch {
	case runsServers(from):
		return []string{"ChartUpgraded"}
	case from == "0.1.0":
		return []string{"ChartUpgraded", "ServersMigrated", "SpecMigrated", "PodRetiring"}
	default:
		return []string{"ChartUpgraded", "ServersMigrated", "PodRetiring"}
	}
}

// expectOperandsMigrated checks the operands after an upgrade to the current release, however it
// was installed.
func expectOperandsMigrated(ns string, uids map[string]types.UID) {
	key := types.NamespacedName{Namespace: ns, Name: "memcached-sample"}
	Eventually(func(g Gomega) {
		mc := &cachev1.Memcached{}
		g.Expect(k8s.Get(ctx(), key, mc)).To(Succeed())
		g.Expect(mc.UID).To(Equal(uids["memcached"]), "the same Memcached")
		// Only the current release reports the revision, and an upgrade makes a new one: the
		// state below is the new operator's, not the old one's before it was replaced.
		g.Expect(mc.Status.DeployedRelease).To(HaveField("Revision", BeNumerically(">", 1)), "the release upgraded by the new operator")
		g.Expect(mc.Spec.Memcached).To(HaveField("MaxMemoryMB", BeEquivalentTo(96)))
		g.Expect(mc.Spec.Memcached).To(HaveField("MemoryLimitMB", BeZero()))
		g.Expect(mc.Status.Version).To(Equal("1.6.39"))
		g.Expect(mc.Status.ReadyReplicas).To(BeEquivalentTo(3))
		g.Expect(mc.Status.Conditions).To(ContainElement(And(HaveField("Type", "Progressing"), HaveField("Reason", "Complete"))))
		g.Expect(mc.Status.Conditions).To(ContainElement(And(HaveField("Type", "Deployed"), HaveField("Status", metav1.ConditionTrue))))
	}, 5*time.Minute, poll).Should(Succeed())

	servers := &appsv1.StatefulSet{}
	Expect(k8s.Get(ctx(), key, servers)).To(Succeed())
	Expect(servers.Spec.Selector.MatchLabels).To(HaveKeyWithValue("app.kubernetes.io/component", "cache"))
	Expect(servers.Spec.Template.Spec.Containers[0].Image).To(Equal("docker.io/library/memcached:1.6.39"))
	Expect(servers.Spec.Template.Spec.Containers[0].Args).To(ContainElements("-m", "96"))
	Expect(k8s.Get(ctx(), key, &appsv1.Deployment{})).To(Satisfy(apierrors.IsNotFound), "the Deployment of the earlier release is gone")
	Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(k8s.List(ctx(), pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": "memcached-sample"})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(3), "the pods of the earlier release are gone")
		for _, p := range pods.Items {
			g.Expect(metav1.GetControllerOf(&p)).To(HaveField("Kind", "StatefulSet"), "pod %s is a server of the StatefulSet", p.Name)
			g.Expect(p.Spec.Containers[0].Image).To(Equal("docker.io/library/memcached:1.6.39"))
		}
	}, timeout, poll).Should(Succeed())

	By("reading every key back through the server list that status now gives, with a sharding client")
	mc := &cachev1.Memcached{}
	Expect(k8s.Get(ctx(), key, mc)).To(Succeed())
	Expect(mc.Status.Servers).To(HaveLen(3))
	list := strings.Join(mc.Status.Servers, ",")
	var stored, read clientCounts
	runClient(ns, "store-after-upgrade", &stored, "-servers", list, "-op", "store", "-keys", "3000")
	runClient(ns, "read-after-upgrade", &read, "-servers", list, "-op", "read", "-keys", "3000")
	Expect(read).To(And(HaveField("Hits", 3000), HaveField("Misses", 0), HaveField("Failures", 0)))

	backup := &cachev1.MemcachedBackup{}
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: ns, Name: "memcachedbackup-sample"}, backup)).To(Succeed())
		g.Expect(backup.UID).To(Equal(uids["backup"]), "the same MemcachedBackup")
		g.Expect(backup.Status.Nodes).To(HaveLen(2))
		g.Expect(backup.Status.Conditions).To(ContainElement(And(HaveField("Type", "Available"), HaveField("Status", metav1.ConditionTrue))))
		d := &appsv1.Deployment{}
		g.Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: ns, Name: "memcachedbackup-sample"}, d)).To(Succeed())
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("docker.io/library/memcached:1.6.39"))
	}, timeout, poll).Should(Succeed())

	fmt.Fprintln(GinkgoWriter, kubectl("-n", ns, "get", "events", "--field-selector", "involvedObject.name=memcached-sample",
		"-o", "custom-columns=TIME:.lastTimestamp,REASON:.reason,MESSAGE:.message", "--sort-by=.lastTimestamp"))
}

func crUIDs(ns string) map[string]types.UID {
	mc := &cachev1.Memcached{}
	Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: ns, Name: "memcached-sample"}, mc)).To(Succeed())
	backup := &cachev1.MemcachedBackup{}
	Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: ns, Name: "memcachedbackup-sample"}, backup)).To(Succeed())
	return map[string]types.UID{"memcached": mc.UID, "backup": backup.UID}
}

var _ = Describe("Upgrades from earlier releases", Ordered, Serial, func() {
	BeforeAll(func() {
		withoutOperator()
		upgradeEnv()
	})
	AfterAll(removeOLMv0Leftovers)

	// From the oldest release, the catalog's skipRange leads straight to the channel's head: one
	// InstallPlan, no release in between. That upgrade also rolls the memcached pods (the
	// memcached version changed since), so the operator can be killed in the middle of it.
	It("upgrades from the oldest release through the catalog's skipRange with a Manual approval, without a failed request, though the operator is killed during the operand upgrade", func() {
		Expect(oldestVersion).NotTo(Equal(previousVersion), "a release between the oldest and this one, for skipRange to skip")
		ns := "memcached-upgrade"
		kubectl("create", "namespace", ns)
		DeferCleanup(deleteNamespace, ns)
		subscribe(ns, subscription{targetNamespaces: []string{ns}, approval: "Manual", startingCSV: csvOf(oldestVersion)})

		By("installing " + oldestVersion + " with an approved InstallPlan")
		approveInstallPlan(ns, oldestVersion)
		Eventually(csvPhase(ns, csvOf(oldestVersion)), timeout, poll).Should(Equal("Succeeded"))
		createCRsOf(ns, oldestVersion)
		uids := crUIDs(ns)
		p := startProbe(ns, "memcached-sample:11211")

		By("approving the upgrade to " + currentVersion + ", skipping " + previousVersion)
		approveInstallPlan(ns, currentVersion)
		Expect(kubectl("-n", ns, "get", "installplan", "-o", "jsonpath={.items[*].spec.clusterServiceVersionNames}")).NotTo(ContainSubstring(csvOf(previousVersion)))

		// Watched from the approval on, not from the new CSV's Succeeded phase, which OLM may
		// report after the rollout. Only the new operator writes Progressing (0.1.0 has none).
		By("killing the operator while the memcached pods roll")
		Eventually(func(g Gomega) {
			mc := &cachev1.Memcached{}
			g.Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: ns, Name: "memcached-sample"}, mc)).To(Succeed())
			g.Expect(mc.Status.Conditions).To(ContainElement(And(HaveField("Type", "Progressing"), HaveField("Status", metav1.ConditionTrue))))
		}, timeout, 200*time.Millisecond).Should(Succeed())
		restarts := crashManager(ns)
		Eventually(func(g Gomega) int32 { return managerRestarts(g, ns) }, timeout, poll).Should(BeNumerically(">", restarts),
			"the kubelet restarts the killed manager in its pod")

		expectMigrated(ns, oldestVersion, uids, false)
		Expect(p.stop().Failures).To(BeZero(), "no client request fails during the upgrade")
	})

	It("upgrades from the previous release with operator-sdk run bundle-upgrade keeping the keys, then memcached through the CR with warm restarts keeping them, and reports a failing operand upgrade without rolling back", func() {
		ns := "memcached-bundle-upgrade"
		kubectl("create", "namespace", ns)
		DeferCleanup(func() {
			_, _ = kubectlOut("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", "reject-"+ns, "--ignore-not-found")
			deleteNamespace(ns)
		})
		sdk("run", "bundle", previousBundleImage, "-n", ns, "--index-image", indexImage, "--decompression-image", busyboxImage,
			"--install-mode", "OwnNamespace", "--timeout", "5m")
		createCRsOf(ns, previousVersion)
		uids := crUIDs(ns)
		key := types.NamespacedName{Namespace: ns, Name: "memcached-sample"}
		selector := map[string]string{"app.kubernetes.io/instance": key.Name, "app.kubernetes.io/name": "memcached"}
		// An operator upgrade that changes no server's container keeps every key.
		var keep func()
		if runsServers(previousVersion) {
			By("storing 10000 keys over the servers of " + previousVersion)
			keep = keysKept(ns, key, selector, "before-upgrade", 10000, 10000)
		}
		p := startProbe(ns, "memcached-sample:11211")

		sdk("run", "bundle-upgrade", bundleImage, "-n", ns, "--timeout", "5m")
		expectMigrated(ns, previousVersion, uids, true)
		if keep != nil {
			By("reading back every key stored before the upgrade, from the same servers")
			keep()
		}

		// With a short minReadySeconds (10 s by default) in the same change: the rollout's pace
		// is not what this proves.
		By("turning warm restarts on: the servers roll out once more (each replaced, behind the Service), and start empty")
		kubectl("-n", ns, "patch", "memcached", key.Name, "--type=merge", "-p", `{"spec":{"keepCacheAcross":"Restarts","minReadySeconds":3}}`)
		Eventually(func(g Gomega) cachev1.HelmCondition { return memcachedConditionOf(g, key, "CacheWarm") }, timeout, poll).Should(
			HaveField("Reason", "StartedEmpty"))
		awaitComplete(key, func(g Gomega, _ *cachev1.Memcached) {
			pods := &corev1.PodList{}
			g.Expect(k8s.List(ctx(), pods, client.InNamespace(ns), client.MatchingLabels(selector))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(3))
			for _, p := range pods.Items {
				g.Expect(p.Spec.Volumes).To(ContainElement(HaveField("Name", "memory-file")), "%s keeps its items in a memory file", p.Name)
			}
		})

		By("changing the memcached version through the CR: each server restarts in its pod with its keys, out of the Service meanwhile")
		keep = keysKept(ns, key, selector, "before-version", 10000, 9900)
		kubectl("-n", ns, "patch", "memcached", key.Name, "--type=merge", "-p", `{"spec":{"image":{"tag":"1.6.38"}}}`)
		Eventually(func(g Gomega) cachev1.HelmCondition { return memcachedConditionOf(g, key, "CacheWarm") }, timeout, poll).Should(
			HaveField("Reason", "WarmRestart"))
		awaitComplete(key, func(g Gomega, mc *cachev1.Memcached) { g.Expect(mc.Status.Version).To(Equal("1.6.38")) })
		keep()
		Expect(p.stop().Failures).To(BeZero(), "no client request through the Service fails during the upgrade, the rollout that turns warm restarts on, and the warm restarts")

		By("injecting a failing operand upgrade: an admission policy rejects the new pod template")
		p = startProbeNamed(ns, "failure-probe", "memcached-sample:11211")
		rejectAnnotated(ns)
		kubectl("-n", ns, "patch", "memcached", "memcached-sample", "--type=merge", "-p", `{"spec":{"podAnnotations":{"e2e.memcached/reject":"yes"}}}`)
		Eventually(func(g Gomega) {
			mc := &cachev1.Memcached{}
			g.Expect(k8s.Get(ctx(), key, mc)).To(Succeed())
			g.Expect(mc.Status.Conditions).To(ContainElement(And(HaveField("Type", "ReleaseFailed"), HaveField("Status", metav1.ConditionTrue),
				HaveField("Message", ContainSubstring("rejected by the e2e policy")))))
		}, timeout, poll).Should(Succeed())
		revisions := func() []string {
			return strings.Fields(kubectl("-n", ns, "get", "secret", "-l", "owner=helm,name=memcached-sample", "-o", "jsonpath={.items[*].metadata.labels.status}"))
		}
		failed := revisions()
		Consistently(revisions, 20*time.Second, 2*time.Second).Should(Equal(failed), "no rollback, no new revision while the same upgrade backs off")
		Expect(failed).To(ContainElement("failed"))
		Expect(strings.Fields(kubectl("-n", ns, "get", "events", "--field-selector", "involvedObject.name=memcached-sample",
			"-o", "jsonpath={.items[*].reason}"))).To(ContainElement("UpgradeFailed"))

		By("reverting the change, which the operator applies at once")
		kubectl("-n", ns, "patch", "memcached", "memcached-sample", "--type=merge", "-p", `{"spec":{"podAnnotations":null}}`)
		kubectl("-n", ns, "wait", "memcached/memcached-sample", "--for=condition=ReleaseFailed=False", "--timeout=2m")
		Expect(p.stop().Failures).To(BeZero(), "no client request fails during the failed operand upgrade and its revert")

		By("removing the operator with operator-sdk cleanup while its CRs are still there")
		sdk("cleanup", "memcached-operator", "-n", ns, "--timeout", "3m")
		Expect(kubectl("-n", ns, "get", "secret", "-l", "owner=helm", "-o", "name")).To(BeEmpty(),
			"the CRDs went first, while the operator ran and uninstalled every CR's release")
		Expect(kubectl("get", "crd", "-o", "name")).NotTo(ContainSubstring("cache.my.domain"))
	})
})

// rejectAnnotated makes admission refuse, in ns, StatefulSets whose pods carry the annotation
// e2e.memcached/reject.
func rejectAnnotated(ns string) {
	manifest := fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: reject-%[1]s}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [statefulsets]}
  validations:
  - expression: "!has(object.spec.template.metadata.annotations) || !('e2e.memcached/reject' in object.spec.template.metadata.annotations)"
    message: rejected by the e2e policy
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: reject-%[1]s}
spec:
  policyName: reject-%[1]s
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: %[1]s}
`, ns)
	f := filepath.Join(GinkgoT().TempDir(), "policy.yaml")
	Expect(os.WriteFile(f, []byte(manifest), 0o644)).To(Succeed())
	kubectl("apply", "-f", f)
	// The API server loads policies asynchronously: wait until a dry run is refused.
	probe := filepath.Join(GinkgoT().TempDir(), "probe.yaml")
	Expect(os.WriteFile(probe, []byte(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: policy-probe}
spec:
  serviceName: policy-probe
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}, annotations: {e2e.memcached/reject: "yes"}}
    spec: {containers: [{name: c, image: c:1}]}
`), 0o644)).To(Succeed())
	Eventually(func() string {
		out, _ := kubectlOut("-n", ns, "apply", "--dry-run=server", "-f", probe)
		return out
	}, timeout, poll).Should(ContainSubstring("rejected by the e2e policy"))
}

// crashManager kills the manager's process with SIGKILL, as the kernel's OOM killer ends it, and
// returns the restart count its container had. The pod stays, so the kubelet restarts the
// container in it and the new process keeps the leader lock the pod holds (leader for life).
// (Deleting the pod instead, even with --force, leaves the old process its last reconcile while
// a new pod takes the lock: two operators at once, which leader for life rules out.) The tests
// run on the cluster's node, so the process is found by its container ID in /proc/*/cgroup.
func crashManager(ns string) int32 {
	pod := managerPod(Default, ns)
	id, restarts := managerContainer(pod)
	Expect(id).NotTo(BeEmpty(), "the manager container of pod %s has started", pod.Name)
	cgroups, err := filepath.Glob("/proc/[0-9]*/cgroup")
	Expect(err).NotTo(HaveOccurred())
	killed := 0
	for _, f := range cgroups {
		if raw, err := os.ReadFile(f); err == nil && strings.Contains(string(raw), id) {
			pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			Expect(err).NotTo(HaveOccurred())
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed++
			}
		}
	}
	Expect(killed).To(BeNumerically(">", 0), "a process of container %s", id)
	fmt.Fprintf(GinkgoWriter, "killed the manager of pod %s (container %s, %d process(es))\n", pod.Name, id, killed)
	return restarts
}

func managerRestarts(g Gomega, ns string) int32 {
	_, restarts := managerContainer(managerPod(g, ns))
	return restarts
}

// managerPod is the operator's pod in ns (not one being deleted).
func managerPod(g Gomega, ns string) *corev1.Pod {
	pods := &corev1.PodList{}
	g.ExpectWithOffset(1, k8s.List(ctx(), pods, client.InNamespace(ns), client.MatchingLabels{"control-plane": "controller-manager"})).To(Succeed())
	var live []*corev1.Pod
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil {
			live = append(live, &pods.Items[i])
		}
	}
	g.ExpectWithOffset(1, live).To(HaveLen(1), "one manager pod")
	return live[0]
}

// managerContainer is the container ID (without the runtime's prefix) and the restart count of the
// manager container of pod.
func managerContainer(pod *corev1.Pod) (string, int32) {
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name == "manager" {
			_, id, _ := strings.Cut(c.ContainerID, "://")
			return id, c.RestartCount
		}
	}
	return "", 0
}

// keysKept stores n keys (prefix-0 ...) with a hashing client over the servers status lists now,
// and returns what checks, after a change, that the same pods are there and at least least of
// the keys read back, none stale.
func keysKept(ns string, key types.NamespacedName, selector map[string]string, prefix string, n, least int) func() {
	GinkgoHelper()
	list := strings.Join(awaitServers(key, 3), ",")
	var stored clientCounts
	runClient(ns, "store-"+prefix, &stored, "-servers", list, "-op", "store", "-prefix", prefix, "-keys", strconv.Itoa(n))
	Expect(stored).To(And(HaveField("Hits", n), HaveField("Failures", 0)))
	uids := podUIDs(ns, selector)
	return func() {
		GinkgoHelper()
		Expect(podUIDs(ns, selector)).To(Equal(uids), "the same servers")
		read := expectReadBack(ns, "read-"+prefix, list, prefix, n, least)
		AddReportEntry("keys read back after the change ("+prefix+")", fmt.Sprintf("%d of %d", read.Hits, n))
	}
}

// expectReadBack reads keys prefix-0 ... prefix-<n-1> with a hashing client over list (pod name
// name) and expects no failure, no stale value and at least least hits.
func expectReadBack(ns, name, list, prefix string, n, least int) clientCounts {
	GinkgoHelper()
	var read clientCounts
	runClient(ns, name, &read, "-servers", list, "-op", "read", "-prefix", prefix, "-keys", strconv.Itoa(n))
	Expect(read.Failures).To(BeZero())
	Expect(read.Wrong).To(BeZero(), "no stale value")
	Expect(read.Hits).To(BeNumerically(">=", least), "%d of %d keys read back (%d misses)", read.Hits, n, read.Misses)
	return read
}

// awaitComplete waits until a Memcached's rollout is complete, all 3 servers ready, and check holds.
func awaitComplete(key types.NamespacedName, check func(Gomega, *cachev1.Memcached)) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		mc := &cachev1.Memcached{}
		g.Expect(k8s.Get(ctx(), key, mc)).To(Succeed())
		check(g, mc)
		g.Expect(mc.Status.ReadyReplicas).To(BeEquivalentTo(3))
		g.Expect(mc.Status.Conditions).To(ContainElement(And(HaveField("Type", "Progressing"), HaveField("Reason", "Complete"))))
	}, 5*time.Minute, poll).Should(Succeed())
}
