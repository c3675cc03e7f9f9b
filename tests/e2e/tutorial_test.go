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
	"sort"
	"strings"
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

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/helm"
)

const (
	e2eNamespace = "memcached-e2e"
	mcName       = "memcached-sample"
	backupName   = "memcachedbackup-sample"
	timeout      = 3 * time.Minute
	poll         = time.Second
)

// runningPods returns the names of the Running, ready, not terminating pods with these labels.
func runningPods(selector map[string]string) func(g Gomega) []string {
	return runningPodsIn(e2eNamespace, selector)
}

// runningPodsIn is runningPods in namespace ns.
func runningPodsIn(ns string, selector map[string]string) func(g Gomega) []string {
	return func(g Gomega) []string {
		pods := &corev1.PodList{}
		g.Expect(k8s.List(ctx(), pods, client.InNamespace(ns), client.MatchingLabels(selector))).To(Succeed())
		var names []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
				continue
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					names = append(names, p.Name)
				}
			}
		}
		sort.Strings(names)
		return names
	}
}

var memcachedPods = map[string]string{"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": mcName}
var backupPods = map[string]string{"app.kubernetes.io/name": "memcached-backup", "app.kubernetes.io/instance": backupName}

// probePod is a restricted pod that runs memcache-probe with args.
func probePod(ns, name string, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy:   corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "probe", Image: probeImage, Args: args,
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
}

// probeResultIn runs memcache-probe to completion in namespace ns and returns its JSON result.
func probeResultIn(ns, name string, args ...string) map[string]any {
	phase, out := probeIn(ns, name, args...)
	Expect(phase).To(Equal(corev1.PodSucceeded), "memcache-probe failed:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var res map[string]any
	Expect(json.Unmarshal([]byte(lines[len(lines)-1]), &res)).To(Succeed())
	return res
}

// probeIn runs memcache-probe to completion in ns and returns how its pod ended and its log.
func probeIn(ns, name string, args ...string) (corev1.PodPhase, string) {
	pod := probePod(ns, name, args...)
	Expect(k8s.Create(ctx(), pod)).To(Succeed())
	Eventually(func(g Gomega) corev1.PodPhase {
		g.Expect(k8s.Get(ctx(), client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		return pod.Status.Phase
	}, timeout, poll).Should(Or(Equal(corev1.PodSucceeded), Equal(corev1.PodFailed)))
	return pod.Status.Phase, kubectl("-n", ns, "logs", name)
}

// operatorPods returns the names of the operator's running, not terminating pods.
func operatorPods(g Gomega) []string {
	pods := &corev1.PodList{}
	g.Expect(k8s.List(ctx(), pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"control-plane": "controller-manager"})).To(Succeed())
	var names []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			names = append(names, p.Name)
		}
	}
	return names
}

// smallCRs creates a one-pod Memcached and MemcachedBackup, named as the samples, in ns and waits
// until the operator has deployed them.
func smallCRs(ns string) {
	Expect(k8s.Create(ctx(), &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: mcName},
		Spec: cachev1.MemcachedSpec{ReplicaCount: ptr.To[int32](1)}})).To(Succeed())
	Expect(k8s.Create(ctx(), &cachev1.MemcachedBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: backupName},
		Spec: cachev1.MemcachedBackupSpec{Size: 1}})).To(Succeed())
	kubectl("-n", ns, "wait", "memcached/"+mcName, "--for=condition=Deployed", "--timeout=3m")
	kubectl("-n", ns, "wait", "memcachedbackup/"+backupName, "--for=condition=Available", "--timeout=3m")
}

// releaseGone checks that the release of the Memcached ns/name is uninstalled: its objects and its
// records are gone.
func releaseGone(ns, name string) func(g Gomega) {
	return func(g Gomega) {
		for _, obj := range []client.Object{&appsv1.StatefulSet{}, &appsv1.Deployment{}, &corev1.Service{}, &corev1.ServiceAccount{}} {
			err := k8s.Get(ctx(), types.NamespacedName{Namespace: ns, Name: name}, obj)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s/%s still exists", obj, ns, name)
		}
		secrets := &corev1.SecretList{}
		g.Expect(k8s.List(ctx(), secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": name})).To(Succeed())
		g.Expect(secrets.Items).To(BeEmpty(), "the release records of %s/%s are gone", ns, name)
	}
}

// The tutorial's specs share the operator of make deploy (operator_test.go). They run first
// (SpecPriority), the long ones first, across the suite's processes; those marked Serial run
// after every parallel spec, on one process.
var _ = Describe("The tutorial on a real cluster", SpecPriority(1), func() {
	BeforeEach(withOperator)

	Describe("with the samples", Ordered, func() {
		BeforeAll(func() { kubectl("create", "namespace", e2eNamespace) })
		AfterAll(func() {
			_, _ = kubectlOut("delete", "namespace", e2eNamespace, "--ignore-not-found", "--wait=true", "--timeout=2m")
		})

		It("runs 3 memcached pods for config/samples/cache_v1_memcached.yaml", func() {
			kubectl("-n", e2eNamespace, "apply", "-f", "config/samples/cache_v1_memcached.yaml")
			Eventually(runningPods(memcachedPods), timeout, poll).Should(HaveLen(3))
			mc := &cachev1.Memcached{}
			Eventually(func(g Gomega) string {
				g.Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: e2eNamespace, Name: mcName}, mc)).To(Succeed())
				for _, c := range mc.Status.Conditions {
					if c.Type == "Deployed" {
						return string(c.Status)
					}
				}
				return ""
			}, timeout, poll).Should(Equal("True"))
			servers := &appsv1.StatefulSet{}
			Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: e2eNamespace, Name: mcName}, servers)).To(Succeed())
			Expect(servers.Spec.Template.Spec.Containers[0].Image).To(Equal(memcachedImage), "the operator uses RELATED_IMAGE_MEMCACHED")
			Expect(runningPods(memcachedPods)(Default)).To(Equal([]string{mcName + "-0", mcName + "-1", mcName + "-2"}), "servers with stable names")
		})

		It("runs 2 pods for config/samples/cache_v1_memcachedbackup.yaml and lists them in status.nodes", func() {
			kubectl("-n", e2eNamespace, "apply", "-f", "config/samples/cache_v1_memcachedbackup.yaml")
			Eventually(runningPods(backupPods), timeout, poll).Should(HaveLen(2))
			Eventually(func(g Gomega) []string {
				b := &cachev1.MemcachedBackup{}
				g.Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: e2eNamespace, Name: backupName}, b)).To(Succeed())
				return b.Status.Nodes
			}, timeout, poll).Should(Equal(runningPods(backupPods)(Default)))
			out := kubectl("-n", e2eNamespace, "get", "memcachedbackup", backupName, "-o", "jsonpath={.status.conditions[?(@.type==\"Available\")].status}")
			Expect(out).To(Equal("True"))
		})

		It("serves: an application's sharding client stores and reads keys over the server list in status", func() {
			mc := &cachev1.Memcached{}
			Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: e2eNamespace, Name: mcName}, mc)).To(Succeed())
			servers := &appsv1.StatefulSet{}
			Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: e2eNamespace, Name: mcName}, servers)).To(Succeed())
			var want []string
			for _, pod := range runningPods(memcachedPods)(Default) {
				want = append(want, fmt.Sprintf("%s.%s.%s.svc:11211", pod, servers.Spec.ServiceName, e2eNamespace))
			}
			Expect(want).To(HaveLen(3))
			Expect(mc.Status.Servers).To(Equal(want), "each server by its stable DNS name, in ordinal order")
			var check struct{ Stored, Read clientCounts }
			runClient(e2eNamespace, "check", &check, "-servers", strings.Join(mc.Status.Servers, ","), "-op", "check", "-keys", "500")
			Expect(check.Stored).To(And(HaveField("Hits", 500), HaveField("Failures", 0)))
			Expect(check.Read).To(And(HaveField("Hits", 500), HaveField("Misses", 0), HaveField("Failures", 0)))
		})

		It("reconciles changed specs re-applied with kubectl", func() {
			kubectl("-n", e2eNamespace, "patch", "memcached", mcName, "--type=merge", "-p", `{"spec":{"replicaCount":2}}`)
			kubectl("-n", e2eNamespace, "patch", "memcachedbackup", backupName, "--type=merge", "-p", `{"spec":{"size":3}}`)
			Eventually(runningPods(memcachedPods), timeout, poll).Should(HaveLen(2))
			Eventually(runningPods(backupPods), timeout, poll).Should(HaveLen(3))
			Eventually(func(g Gomega) {
				b := &cachev1.MemcachedBackup{}
				g.Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: e2eNamespace, Name: backupName}, b)).To(Succeed())
				g.Expect(b.Status.Nodes).To(HaveLen(3))
				g.Expect(b.Status.Nodes).To(Equal(runningPods(backupPods)(g)), "status.nodes names the running pods")
			}, timeout, poll).Should(Succeed())
		})

		It("repairs drift: a deleted StatefulSet or Deployment comes back, a hand-scaled one is scaled back", func() {
			workloads := map[string]func() client.Object{
				mcName:     func() client.Object { return &appsv1.StatefulSet{} },
				backupName: func() client.Object { return &appsv1.Deployment{} },
			}
			for name, obj := range workloads {
				before := obj()
				Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: e2eNamespace, Name: name}, before)).To(Succeed())
				Expect(k8s.Delete(ctx(), before, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
				Eventually(func(g Gomega) {
					now := obj()
					g.Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: e2eNamespace, Name: name}, now)).To(Succeed())
					g.Expect(now.GetUID()).NotTo(Equal(before.GetUID()))
				}, timeout, poll).Should(Succeed(), "%T %s is recreated", before, name)
			}
			Eventually(runningPods(memcachedPods), timeout, poll).Should(HaveLen(2))
			Eventually(runningPods(backupPods), timeout, poll).Should(HaveLen(3))

			kubectl("-n", e2eNamespace, "scale", "statefulset", mcName, "--replicas=5")
			kubectl("-n", e2eNamespace, "scale", "deployment", backupName, "--replicas=1")
			Eventually(func(g Gomega) []int32 {
				servers, deploy := &appsv1.StatefulSet{}, &appsv1.Deployment{}
				g.Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: e2eNamespace, Name: mcName}, servers)).To(Succeed())
				g.Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: e2eNamespace, Name: backupName}, deploy)).To(Succeed())
				return []int32{*servers.Spec.Replicas, *deploy.Spec.Replicas}
			}, timeout, poll).Should(Equal([]int32{2, 3}))
		})

		It("removes everything the CRs made when they are deleted", func() {
			kubectl("-n", e2eNamespace, "delete", "-f", "config/samples/cache_v1_memcached.yaml", "-f", "config/samples/cache_v1_memcachedbackup.yaml", "--wait=true", "--timeout=2m")
			Eventually(func(g Gomega) {
				for _, obj := range []client.Object{&appsv1.StatefulSet{}, &appsv1.Deployment{}, &corev1.Service{}, &corev1.ServiceAccount{}} {
					for _, name := range []string{mcName, backupName} {
						err := k8s.Get(ctx(), types.NamespacedName{Namespace: e2eNamespace, Name: name}, obj)
						g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s still exists", obj, name)
					}
				}
				secrets := &corev1.SecretList{}
				g.Expect(k8s.List(ctx(), secrets, client.InNamespace(e2eNamespace), client.MatchingLabels{"owner": "helm"})).To(Succeed())
				g.Expect(secrets.Items).To(BeEmpty(), "Helm release secrets are gone")
				g.Expect(runningPods(memcachedPods)(g)).To(BeEmpty())
				pods := &corev1.PodList{}
				g.Expect(k8s.List(ctx(), pods, client.InNamespace(e2eNamespace), client.MatchingLabels(backupPods))).To(Succeed())
				g.Expect(pods.Items).To(BeEmpty())
			}, timeout, poll).Should(Succeed())
		})
	})

	// The long proofs first: they are handed to the processes in this order.
	It("sizes a cache from its own evictions: memory grown in place, then a server added, removed again once the load stops", proveAutopilot)

	It("serves TLS with client certificates: 10000 keys over mutual TLS, other clients refused, stats still read, a certificate renewed under a reading client with no failed request", proveTLS)

	It("follows a new CA of the user's certificate Secret: the exporter reads memcached at every scrape, clients given the new CA read every key", proveCAChange)

	It("keeps the keys through the changes it rolls out: annotations in place, a new image restarted warm one server at a time, a new item memory said to start empty", proveCacheKept)

	It("keeps a drained server's items on a volume of its own: turned on with the servers' names kept, each server evicted in turn back with its items, stale ones said, a copy too old or never saved starting empty", provePersistence)

	It("proves its monitoring against a real Prometheus: a cache overfilled shows in status, Events, metrics and alerts, and clears", proveMonitoring)

	It("serves as one cache through its server list: every key read back, no stale read, one server cold at a time while rolling, most keys kept when it grows", proveOneCache)

	It("keeps a namespace editor's forged release records from deleting a Deployment of another namespace or a Secret in kube-system", proveTenantCannotReachOut)

	It("changes the servers' memory in place: 30000 keys kept, no restart, memcached's own limit doubled and halved", proveMemoryInPlace)

	It("deletes a namespace with live Memcached and MemcachedBackup CRs: everything goes, nothing stays Terminating", func() {
		ns := "memcached-doomed"
		kubectl("create", "namespace", ns)
		smallCRs(ns)
		kubectl("delete", "namespace", ns, "--timeout=3m")
		out, _ := kubectlOut("get", "namespace", ns)
		Expect(out).To(ContainSubstring("NotFound"))
	})

	It("says within a minute, in status and with an Event, that a pod cannot pull its image, and recovers once the image is fixed", func() {
		ns := "memcached-bad-image"
		kubectl("create", "namespace", ns)
		DeferCleanup(deleteNamespace, ns)
		key := types.NamespacedName{Namespace: ns, Name: mcName}
		Expect(k8s.Create(ctx(), &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: mcName},
			Spec: cachev1.MemcachedSpec{ReplicaCount: ptr.To[int32](1),
				Image: &cachev1.ImageSpec{Repository: "localhost:5000/e2e/no-such-image", Tag: "1.6.39"}}})).To(Succeed())
		progressing := func(g Gomega) cachev1.HelmCondition { return memcachedConditionOf(g, key, "Progressing") }
		Eventually(progressing, time.Minute, poll).Should(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "PodsFailing"),
			HaveField("Message", MatchRegexp(`container memcached: (ErrImagePull|ImagePullBackOff): .*no-such-image`))))
		Eventually(eventReasonsOf(ns, mcName), timeout, poll).Should(ContainElement("PodsFailing"))

		kubectl("-n", ns, "patch", "memcached", mcName, "--type=merge", "-p", `{"spec":{"image":null}}`)
		Eventually(progressing, timeout, poll).Should(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "Complete")))
	})

	// Serial: these move, stop or remove the operator, or change the whole cluster's network.
	It("lets only the clients its NetworkPolicy allows reach memcached, on a cluster that enforces it: others refused until the policy is off", Serial, proveNetworkPolicy)

	It("leads for life with 2 replicas: one reconciles, the lock belongs to its pod, and leadership moves when it is deleted", Serial, func() {
		ns := "memcached-leader"
		kubectl("create", "namespace", ns)
		DeferCleanup(deleteNamespace, ns)
		smallCRs(ns)
		kubectl("-n", operatorNamespace, "scale", "deployment", operatorDeployment, "--replicas=2")
		kubectl("-n", operatorNamespace, "rollout", "status", "deployment/"+operatorDeployment, "--timeout=3m")

		leader := func(g Gomega) string {
			lock := &corev1.ConfigMap{}
			g.Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: operatorNamespace, Name: "memcached-operator-lock"}, lock)).To(Succeed())
			g.Expect(lock.OwnerReferences).To(HaveLen(1))
			g.Expect(lock.OwnerReferences[0].Kind).To(Equal("Pod"))
			return lock.OwnerReferences[0].Name
		}
		Eventually(operatorPods, timeout, poll).Should(HaveLen(2))
		var first string
		Eventually(func(g Gomega) {
			first = leader(g)
			g.Expect(operatorPods(g)).To(ContainElement(first), "the lock names a running pod")
		}, timeout, poll).Should(Succeed())
		var follower string
		for _, p := range operatorPods(Default) {
			if p != first {
				follower = p
			}
		}
		Expect(follower).NotTo(BeEmpty())
		Eventually(func() string { return kubectl("-n", operatorNamespace, "logs", follower) }, timeout, poll).Should(ContainSubstring("Not the leader. Waiting."))
		Expect(kubectl("-n", operatorNamespace, "logs", follower)).NotTo(ContainSubstring(`"reconciling"`), "only the leader reconciles")
		Expect(kubectl("-n", operatorNamespace, "logs", first)).To(ContainSubstring("became the leader"))

		By("deleting the leader's pod, which hands the lock to another pod")
		// The follower and the Deployment's replacement pod race for it; either may win.
		kubectl("-n", operatorNamespace, "delete", "pod", first, "--wait=false")
		var next string
		Eventually(func(g Gomega) {
			next = leader(g)
			g.Expect(next).NotTo(Equal(first))
			g.Expect(operatorPods(g)).To(ContainElement(next))
		}, timeout, poll).Should(Succeed())
		Eventually(func() string { return kubectl("-n", operatorNamespace, "logs", next) }, timeout, poll).Should(ContainSubstring("became the leader"))
		Eventually(operatorPods, timeout, poll).Should(HaveLen(2))
		for _, p := range operatorPods(Default) {
			if p != next {
				Expect(kubectl("-n", operatorNamespace, "logs", p)).NotTo(ContainSubstring(`"reconciling"`), "only the leader %s reconciles", next)
			}
		}

		By("reconciling on under the new leader")
		kubectl("-n", ns, "patch", "memcachedbackup", backupName, "--type=merge", "-p", `{"spec":{"size":2}}`)
		Eventually(runningPodsIn(ns, backupPods), timeout, poll).Should(HaveLen(2))
		kubectl("-n", operatorNamespace, "scale", "deployment", operatorDeployment, "--replicas=1")
	})

	It("uninstalls the release of a CR deleted while the operator was down, once it is back", Serial, func() {
		ns := "memcached-operator-down"
		kubectl("create", "namespace", ns)
		DeferCleanup(deleteNamespace, ns)
		smallCRs(ns)

		kubectl("-n", operatorNamespace, "scale", "deployment", operatorDeployment, "--replicas=0")
		Eventually(operatorPods, timeout, poll).Should(BeEmpty())
		kubectl("-n", ns, "delete", "memcached", mcName, "--wait=false")
		Consistently(func(g Gomega) []string {
			mc := &cachev1.Memcached{}
			g.Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: ns, Name: mcName}, mc)).To(Succeed())
			return mc.Finalizers
		}, 5*time.Second, poll).Should(ContainElement(helm.UninstallFinalizer), "the finalizer holds the CR until the operator has uninstalled its release")

		kubectl("-n", operatorNamespace, "scale", "deployment", operatorDeployment, "--replicas=1")
		Eventually(releaseGone(ns, mcName), timeout, poll).Should(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx(), types.NamespacedName{Namespace: ns, Name: mcName}, &cachev1.Memcached{}))
		}, timeout, poll).Should(BeTrue())
	})

	It("leaves no operator objects after make undeploy, and with CRs present removes them and their releases first", Serial, func() {
		ns := "memcached-left"
		kubectl("create", "namespace", ns)
		DeferCleanup(deleteNamespace, ns)
		smallCRs(ns)

		mustMake("undeploy")
		Eventually(releaseGone(ns, mcName), timeout, poll).Should(Succeed())
		Eventually(func(g Gomega) {
			out, _ := kubectlOut("get", "namespace", operatorNamespace)
			g.Expect(out).To(ContainSubstring("NotFound"))
			out, _ = kubectlOut("get", "crd", "memcacheds.cache.my.domain", "memcachedbackups.cache.my.domain")
			g.Expect(out).NotTo(ContainSubstring("cache.my.domain "))
			out, _ = kubectlOut("get", "clusterroles,clusterrolebindings", "-o", "name")
			g.Expect(out).NotTo(ContainSubstring("memcached-operator-"))
		}, timeout, poll).Should(Succeed())
	})
})
