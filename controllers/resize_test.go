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
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/labels"
	"github.com/example/memcached-operator/internal/memcache"
)

// The servers' memory changes in place: the envtest's API server serves pods/resize, and real
// memcacheds stand in for the pods' (each at statsPort of a loopback address of its own). The
// specs play the StatefulSet controller (its pods, its revisions) and the kubelet (it reports the
// resources it runs a container with), which envtest does not run.
var _ = Describe("Memory changes in place", func() {
	ctx := context.Background()
	// resizingOneServer makes key a Memcached of one server whose change to 96 MiB of item memory
	// the operator has begun in place: the server held, its pod's limit raised to 128Mi, the
	// kubelet not done yet.
	resizingOneServer := func(key types.NamespacedName) (string, *appsv1.StatefulSet) {
		GinkgoHelper()
		host := startMemcached(64)
		createMemcached(ctx, key, "  replicaCount: 1\n  minReadySeconds: 0\n")
		servers := playServers(ctx, key, []string{host}, "rev-a")
		updateSpec(ctx, key, "  replicaCount: 1\n  minReadySeconds: 0\n  memcached:\n    maxMemoryMB: 96\n")
		awaitHold(ctx, servers, 96, 1)
		setServerRevisions(ctx, servers, "rev-a", "rev-b", 0)
		Eventually(podMemoryLimit(ctx, servers, 0), timeout, interval).Should(Equal("128Mi"))
		return host, servers
	}

	BeforeEach(func() { skipUnlessResizeServed(cfg) })

	It("grows a server's container first, then memcached, and replaces none: the keys stay", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "grow"}
		hosts := []string{startMemcached(64), startMemcached(64)}
		createMemcached(ctx, key, "  replicaCount: 2\n  minReadySeconds: 0\n  memcached:\n    maxMemoryMB: 64\n")
		servers := playServers(ctx, key, hosts, "rev-64")
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionAvailable), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		for _, h := range hosts {
			storeKeys(h, "before", 500)
		}

		By("asking for 128 MiB: the rollout is held, the StatefulSet's template changes")
		updateSpec(ctx, key, "  replicaCount: 2\n  minReadySeconds: 0\n  memcached:\n    maxMemoryMB: 128\n")
		Eventually(func(g Gomega) {
			s := getStatefulSet(g, ctx, servers)
			g.Expect(changeOf(g, ctx, servers)).To(And(HaveField("Phase", cachev1.RolloutChanging), HaveField("Memory.ToMB", BeEquivalentTo(128))))
			g.Expect(s.Spec.UpdateStrategy.RollingUpdate).NotTo(BeNil())
			g.Expect(s.Spec.UpdateStrategy.RollingUpdate.Partition).To(HaveValue(BeEquivalentTo(2)), "both servers held")
			g.Expect(s.Spec.Template.Spec.Containers[0].Args).To(ContainElements("-m", "128"))
		}, timeout, interval).Should(Succeed())
		setServerRevisions(ctx, servers, "rev-64", "rev-128", 0)
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionResizing), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", cachev1.ReasonResizingInPlace)))

		By("the operator resizes each pod through pods/resize; memcached waits for the kubelet")
		for i := range hosts {
			Eventually(podMemoryLimit(ctx, servers, i), timeout, interval).Should(Equal("160Mi"))
			Expect(memoryLimitMB(hosts[i])).To(BeEquivalentTo(64), "memcached grows only once its container has the memory")
		}
		Consistently(func() int { return memoryLimitMB(hosts[0]) }, 2*time.Second, interval).Should(Equal(64))
		for i := range hosts {
			kubeletResized(ctx, servers, i)
		}

		By("then memcached's own limit, then the pod's revision; the hold ends")
		for _, h := range hosts {
			Eventually(func() int { return memoryLimitMB(h) }, timeout, interval).Should(Equal(128))
		}
		Eventually(func(g Gomega) {
			g.Expect(heldServers(ctx, servers)(g)).To(BeZero())
			g.Expect(changeOf(g, ctx, servers)).To(HaveField("Phase", cachev1.RolloutComplete))
			for i := range hosts {
				g.Expect(serverPod(g, ctx, servers, i).Labels).To(HaveKeyWithValue(appsv1.StatefulSetRevisionLabel, "rev-128"))
			}
		}, timeout, interval).Should(Succeed())
		setServerRevisions(ctx, servers, "rev-128", "rev-128", 2)
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionResizing), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", cachev1.ReasonResizedInPlace),
			HaveField("Message", ContainSubstring("item memory 64 → 128 MiB, container memory 96Mi → 160Mi"))))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElements(cachev1.ReasonResizingInPlace, cachev1.ReasonResizedInPlace))
		for _, h := range hosts {
			Expect(countKeys(h, "before", 500)).To(Equal(500), "no key lost")
		}

		By("halving it again: memcached first, then the pods")
		updateSpec(ctx, key, "  replicaCount: 2\n  minReadySeconds: 0\n  memcached:\n    maxMemoryMB: 64\n")
		awaitHold(ctx, servers, 64, 2)
		setServerRevisions(ctx, servers, "rev-128", "rev-64", 0)
		for i, h := range hosts {
			Eventually(podMemoryLimit(ctx, servers, i), timeout, interval).Should(Equal("96Mi"))
			Expect(memoryLimitMB(h)).To(Equal(64), "memcached shrinks before its container")
			kubeletResized(ctx, servers, i)
		}
		Eventually(func(g Gomega) *cachev1.ServersChange { return changeOf(g, ctx, servers) }, timeout, interval).Should(HaveField("Phase", cachev1.RolloutComplete))
		for _, h := range hosts {
			Expect(countKeys(h, "before", 500)).To(Equal(500), "no key lost")
		}
	})

	It("rolls a shrink out when a server holds more memory than the new limit, and says why", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "held"}
		host := startMemcached(128)
		createMemcached(ctx, key, "  replicaCount: 1\n  minReadySeconds: 0\n  memcached:\n    maxMemoryMB: 128\n")
		servers := playServers(ctx, key, []string{host}, "rev-128")
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionAvailable), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		fill(host, 100<<20)

		updateSpec(ctx, key, "  replicaCount: 1\n  minReadySeconds: 0\n  memcached:\n    maxMemoryMB: 64\n")
		Eventually(func(g Gomega) {
			s := getStatefulSet(g, ctx, servers)
			g.Expect(changeOf(g, ctx, servers)).To(And(HaveField("Phase", cachev1.RolloutRolledOut), HaveField("Message", ContainSubstring("above the new 64 MiB"))))
			g.Expect(heldServers(ctx, servers)(g)).To(BeZero(), "not held")
			g.Expect(s.Spec.Template.Spec.Containers[0].Args).To(ContainElements("-m", "64"))
		}, timeout, interval).Should(Succeed())
		setServerRevisions(ctx, servers, "rev-128", "rev-64", 0)
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionResizing), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", cachev1.ReasonRollingOut),
			HaveField("Message", ContainSubstring("memcached gives memory back only as its items expire or are deleted"))))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement("ResizeByRollout"))
		Expect(memoryLimitMB(host)).To(Equal(128), "the operator leaves the server to the rollout")
	})

	It("lets the rollout go on when the kubelet cannot resize a server", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "infeasible"}
		host := startMemcached(64)
		createMemcached(ctx, key, "  replicaCount: 1\n  minReadySeconds: 0\n")
		servers := playServers(ctx, key, []string{host}, "rev-a")
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionAvailable), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))

		updateSpec(ctx, key, "  replicaCount: 1\n  minReadySeconds: 0\n  memcached:\n    maxMemoryMB: 4096\n")
		awaitHold(ctx, servers, 4096, 1)
		setServerRevisions(ctx, servers, "rev-a", "rev-b", 0)
		Eventually(podMemoryLimit(ctx, servers, 0), timeout, interval).Should(Equal("4128Mi"))
		// The kubelet: the node has not that much memory.
		Eventually(func(g Gomega) {
			p := serverPod(g, ctx, servers, 0)
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue,
				Reason: corev1.PodReasonInfeasible, Message: "Node didn't have enough capacity: memory, requested: 4328521728, capacity: 2147483648"})
			g.Expect(k8sClient.Status().Update(ctx, p)).To(Succeed())
		}, timeout, interval).Should(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(heldServers(ctx, servers)(g)).To(BeZero(), "the StatefulSet may replace the server")
			g.Expect(changeOf(g, ctx, servers)).To(And(HaveField("Phase", cachev1.RolloutRolledOut), HaveField("Message", And(ContainSubstring("the kubelet cannot resize server"),
				ContainSubstring("didn't have enough capacity")))))
		}, timeout, interval).Should(Succeed())
		Expect(serverPod(Default, ctx, servers, 0).Labels).To(HaveKeyWithValue(appsv1.StatefulSetRevisionLabel, "rev-a"), "not marked as resized")
		Expect(memoryLimitMB(host)).To(Equal(64), "memcached untouched")
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionResizing), timeout, interval).Should(And(
			HaveField("Reason", cachev1.ReasonRollingOut), HaveField("Message", ContainSubstring("the kubelet cannot resize server"))))
	})

	It("keeps the servers as they are, held, while a ResourceQuota refuses the resize, and resizes them once it allows", func() {
		ns := newNamespace(ctx)
		key := types.NamespacedName{Namespace: ns, Name: "quota"}
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "memory"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceLimitsMemory: resource.MustParse("100Mi")}}}
		Expect(k8sClient.Create(ctx, quota)).To(Succeed())
		setQuotaStatus(ctx, quota, "0")
		host := startMemcached(64)
		createMemcached(ctx, key, "  replicaCount: 1\n  minReadySeconds: 0\n")
		servers := playServers(ctx, key, []string{host}, "rev-64") // 96Mi of the quota's 100Mi
		storeKeys(host, "before", 500)

		updateSpec(ctx, key, "  replicaCount: 1\n  minReadySeconds: 0\n  memcached:\n    maxMemoryMB: 128\n")
		awaitHold(ctx, servers, 128, 1)
		setServerRevisions(ctx, servers, "rev-64", "rev-128", 0)
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionResizing), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", cachev1.ReasonResizeBlocked),
			HaveField("Message", And(ContainSubstring("the servers kept as they are"), ContainSubstring("exceeded quota")))))
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionProgressing), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", cachev1.ReasonResizeBlocked)))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement(cachev1.ReasonResizeBlocked))
		Consistently(func(g Gomega) {
			g.Expect(heldServers(ctx, servers)(g)).To(BeEquivalentTo(1), "no rollout: its new pod would be refused alike, leaving no server")
			g.Expect(podMemoryLimit(ctx, servers, 0)(g)).To(Equal("96Mi"))
			g.Expect(serverPod(g, ctx, servers, 0).Labels).To(HaveKeyWithValue(appsv1.StatefulSetRevisionLabel, "rev-64"))
		}, 3*time.Second, interval).Should(Succeed())
		Expect(memoryLimitMB(host)).To(Equal(64))

		By("the quota raised, the resize goes on at once")
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
			quota.Spec.Hard[corev1.ResourceLimitsMemory] = resource.MustParse("200Mi")
			g.Expect(k8sClient.Update(ctx, quota)).To(Succeed())
		}, timeout, interval).Should(Succeed())
		setQuotaStatus(ctx, quota, "96Mi")
		Eventually(podMemoryLimit(ctx, servers, 0), timeout, interval).Should(Equal("160Mi"))
		kubeletResized(ctx, servers, 0)
		Eventually(func() int { return memoryLimitMB(host) }, timeout, interval).Should(Equal(128))
		Eventually(func(g Gomega) *cachev1.ServersChange { return changeOf(g, ctx, servers) }, timeout, interval).Should(
			And(HaveField("Phase", cachev1.RolloutComplete), HaveField("Message", BeEmpty())))
		Expect(countKeys(host, "before", 500)).To(Equal(500), "no key lost")
	})

	It("lets go of the servers when a change that needs new pods comes during a resize in place", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "beyond"}
		_, servers := resizingOneServer(key)

		By("a memcached flag changes before the kubelet has resized the server")
		updateSpec(ctx, key, "  replicaCount: 1\n  minReadySeconds: 0\n  memcached:\n    maxMemoryMB: 96\n    maxConnections: 2048\n")
		Eventually(func(g Gomega) {
			s := getStatefulSet(g, ctx, servers)
			g.Expect(s.Spec.Template.Spec.Containers[0].Args).To(ContainElements("-c", "2048"))
			g.Expect(heldServers(ctx, servers)(g)).To(BeZero(), "the StatefulSet replaces the server with the new template")
			g.Expect(changeOf(g, ctx, servers)).To(And(HaveField("Phase", cachev1.RolloutRolledOut), HaveField("Message", And(ContainSubstring("another change came"),
				ContainSubstring("memcached's flags change")))))
		}, timeout, interval).Should(Succeed())
		Expect(serverPod(Default, ctx, servers, 0).Labels).To(HaveKeyWithValue(appsv1.StatefulSetRevisionLabel, "rev-a"), "never marked as running the new template")
	})

	It("takes a change of pod annotations during a resize in place along with it", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "along"}
		host, servers := resizingOneServer(key)

		updateSpec(ctx, key, "  replicaCount: 1\n  minReadySeconds: 0\n  memcached:\n    maxMemoryMB: 96\n  podAnnotations: {team: web}\n")
		Eventually(func(g Gomega) {
			s := getStatefulSet(g, ctx, servers)
			g.Expect(s.Spec.Template.Annotations).To(HaveKeyWithValue("team", "web"))
			g.Expect(changeOf(g, ctx, servers)).To(HaveField("What", ContainSubstring("pod labels or annotations, item memory 64 → 96 MiB")))
			g.Expect(heldServers(ctx, servers)(g)).To(BeEquivalentTo(1), "still held")
		}, timeout, interval).Should(Succeed())
		setServerRevisions(ctx, servers, "rev-a", "rev-c", 0)
		kubeletResized(ctx, servers, 0)
		Eventually(func(g Gomega) {
			p := serverPod(g, ctx, servers, 0)
			g.Expect(p.Annotations).To(HaveKeyWithValue("team", "web"))
			g.Expect(p.Labels).To(HaveKeyWithValue(appsv1.StatefulSetRevisionLabel, "rev-c"))
			g.Expect(changeOf(g, ctx, servers)).To(HaveField("Phase", cachev1.RolloutComplete))
		}, timeout, interval).Should(Succeed())
		Expect(memoryLimitMB(host)).To(Equal(96))
	})

	It("keeps memcached's limit on a server resized in place whose memcached restarted", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "restarted"}
		host, servers := resizingOneServer(key)
		kubeletResized(ctx, servers, 0)
		Eventually(func() int { return memoryLimitMB(host) }, timeout, interval).Should(Equal(96))
		awaitComplete(ctx, servers)
		setServerRevisions(ctx, servers, "rev-b", "rev-b", 1)

		By("memcached restarts in the pod, with the -m its arguments say")
		Expect(memcache.SetMemoryLimit(ctx, memcache.Server{Addr: statsAddr(host)}, 64, time.Second)).To(Succeed()) // what a restart with -m 64 leaves
		setPodReady(ctx, key.Namespace, servers.Name+"-0", false)
		Eventually(func(g Gomega) { // the kubelet: memcached's container restarted, and ready
			p := serverPod(g, ctx, servers, 0)
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			p.Status.ContainerStatuses[0].RestartCount++
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
			g.Expect(k8sClient.Status().Update(ctx, p)).To(Succeed())
		}, timeout, interval).Should(Succeed())
		Eventually(func() int { return memoryLimitMB(host) }, timeout, interval).Should(Equal(96))
	})
})

// skipUnlessResizeServed skips a spec on an API server that does not serve pods/resize
// (Kubernetes before 1.33: make test-floor's 1.28), naming what it lacks.
func skipUnlessResizeServed(c *rest.Config) {
	GinkgoHelper()
	if !servesResize(c) {
		Skip("this API server does not serve pods/resize (in-place pod resize, Kubernetes 1.33+)")
	}
}

func servesResize(c *rest.Config) bool {
	GinkgoHelper()
	dc, err := discovery.NewDiscoveryClientForConfig(c)
	Expect(err).NotTo(HaveOccurred())
	list, err := dc.ServerResourcesForGroupVersion("v1")
	Expect(err).NotTo(HaveOccurred())
	for _, r := range list.APIResources {
		if r.Name == "pods/resize" {
			return true
		}
	}
	return false
}

// playServers does, for the StatefulSet of the Memcached key, what its controller and the kubelet
// would (envtest runs neither): a ready pod <statefulset>-<i> made from its template at revision
// for each host, which runs with the template's resources at that IP; and the StatefulSet's
// status says every pod is current.
func playServers(ctx context.Context, key types.NamespacedName, hosts []string, revision string) *appsv1.StatefulSet {
	GinkgoHelper()
	var s *appsv1.StatefulSet
	Eventually(func() (err error) { s, err = serversOfRelease(ctx, key); return err }, timeout, interval).Should(Succeed())
	for i, host := range hosts {
		addServerPod(ctx, s, i, host, revision)
	}
	setServerRevisions(ctx, s, revision, revision, int32(len(hosts)))
	return s
}

// addServerPod makes the StatefulSet's pod of ordinal i from its current template at revision,
// running and ready at the IP host.
func addServerPod(ctx context.Context, s *appsv1.StatefulSet, i int, host, revision string) {
	GinkgoHelper()
	addServerPodStarted(ctx, s, i, host, revision, time.Now())
}

// addServerPodStarted is addServerPod with containers the kubelet says started at started.
func addServerPodStarted(ctx context.Context, s *appsv1.StatefulSet, i int, host, revision string, started time.Time) {
	GinkgoHelper()
	live := &appsv1.StatefulSet{}
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(s), live)).To(Succeed())
	name := fmt.Sprintf("%s-%d", s.Name, i)
	podLabels := maps.Clone(live.Spec.Template.Labels)
	podLabels[appsv1.StatefulSetRevisionLabel] = revision
	podLabels[appsv1.StatefulSetPodNameLabel] = name
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace, Labels: podLabels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(live, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
		Spec: *live.Spec.Template.Spec.DeepCopy(),
	}
	for _, claim := range live.Spec.VolumeClaimTemplates { // each a claim of its own, as the controller makes them
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: claim.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name + "-" + name}}})
	}
	Expect(k8sClient.Create(ctx, pod)).To(Succeed())
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: host, PodIPs: []corev1.PodIP{{IP: host}},
		ObservedGeneration: pod.Generation, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}, Resources: c.Resources.DeepCopy()})
	}
	Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
}

// setServerRevisions writes the StatefulSet's status as its controller would: every pod ready,
// updated of them at the update revision.
func setServerRevisions(ctx context.Context, s *appsv1.StatefulSet, current, update string, updated int32) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		live := &appsv1.StatefulSet{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(s), live)).To(Succeed())
		n := ptr.Deref(live.Spec.Replicas, 1)
		live.Status = appsv1.StatefulSetStatus{ObservedGeneration: live.Generation, Replicas: n, ReadyReplicas: n, AvailableReplicas: n,
			CurrentReplicas: n - updated, UpdatedReplicas: updated, CurrentRevision: current, UpdateRevision: update}
		if current == update {
			live.Status.CurrentReplicas = n
		}
		g.Expect(k8sClient.Status().Update(ctx, live)).To(Succeed())
	}, timeout, interval).Should(Succeed())
}

// setQuotaStatus plays the quota controller (envtest runs none): what the namespace may use, and
// uses.
func setQuotaStatus(ctx context.Context, quota *corev1.ResourceQuota, used string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
		quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{corev1.ResourceLimitsMemory: resource.MustParse(used)}}
		g.Expect(k8sClient.Status().Update(ctx, quota)).To(Succeed())
	}, timeout, interval).Should(Succeed())
}

// updateSpec replaces the spec of the Memcached key, as kubectl apply does, on the CR as it is.
func updateSpec(ctx context.Context, key types.NamespacedName, spec string) {
	GinkgoHelper()
	Eventually(func() error { return k8sClient.Update(ctx, withSpec(ctx, "Memcached", key, spec)) }, timeout, interval).Should(Succeed())
}

// awaitHold waits until the operator holds the StatefulSet's rollout for held servers to resize
// them in place to mb MiB, and Helm has applied the template that asks for it.
func awaitHold(ctx context.Context, s *appsv1.StatefulSet, mb, held int) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		live := getStatefulSet(g, ctx, s)
		g.Expect(changeOf(g, ctx, s)).To(And(HaveField("Phase", cachev1.RolloutChanging), HaveField("Memory.ToMB", BeEquivalentTo(mb))))
		g.Expect(heldServers(ctx, s)(g)).To(BeEquivalentTo(held))
		g.Expect(live.Spec.Template.Spec.Containers[0].Args).To(ContainElements("-m", fmt.Sprint(mb)))
	}, timeout, interval).Should(Succeed())
}

// awaitComplete waits until the operator has recorded the change of the servers complete and let
// go of the StatefulSet's rollout (partition 0), in that order: only then is the StatefulSet's spec
// final, and a status written as its controller would (setServerRevisions) observes the last
// generation. Written between the two, it would report a generation the operator then moves on,
// and envtest runs no controller to report again (the autopilot spec saw RollingOut for good).
func awaitComplete(ctx context.Context, s *appsv1.StatefulSet) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(changeOf(g, ctx, s)).To(HaveField("Phase", cachev1.RolloutComplete))
		g.Expect(heldServers(ctx, s)(g)).To(BeZero())
	}, timeout, interval).Should(Succeed())
}

// changeOf is status.rollout.change of the Memcached whose StatefulSet s is.
func changeOf(g Gomega, ctx context.Context, s *appsv1.StatefulSet) *cachev1.ServersChange {
	mc := &cachev1.Memcached{}
	g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: s.Labels[labels.Instance]}, mc)).To(Succeed())
	g.Expect(mc.Status.Rollout).NotTo(BeNil(), "status.rollout")
	g.Expect(mc.Status.Rollout.Change).NotTo(BeNil(), "status.rollout.change")
	return mc.Status.Rollout.Change
}

// heldServers is the StatefulSet's partition: the servers below it are not replaced.
func heldServers(ctx context.Context, s *appsv1.StatefulSet) func(g Gomega) int32 {
	return func(g Gomega) int32 {
		if ru := getStatefulSet(g, ctx, s).Spec.UpdateStrategy.RollingUpdate; ru != nil {
			return ptr.Deref(ru.Partition, 0)
		}
		return 0
	}
}

func getStatefulSet(g Gomega, ctx context.Context, s *appsv1.StatefulSet) *appsv1.StatefulSet {
	live := &appsv1.StatefulSet{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(s), live)).To(Succeed())
	return live
}

func serverPod(g Gomega, ctx context.Context, s *appsv1.StatefulSet, i int) *corev1.Pod {
	p := &corev1.Pod{}
	g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: fmt.Sprintf("%s-%d", s.Name, i)}, p)).To(Succeed())
	return p
}

// podMemoryLimit is the memory limit of the memcached container in the spec of the StatefulSet's
// pod i: what a resize asked for.
func podMemoryLimit(ctx context.Context, s *appsv1.StatefulSet, i int) func(g Gomega) string {
	return func(g Gomega) string {
		return serverPod(g, ctx, s, i).Spec.Containers[0].Resources.Limits.Memory().String()
	}
}

// kubeletResized reports, as the kubelet does once it has resized a pod, that the memcached
// container runs with the resources its spec asks for.
func kubeletResized(ctx context.Context, s *appsv1.StatefulSet, i int) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		p := serverPod(g, ctx, s, i)
		p.Status.ObservedGeneration = p.Generation
		for j := range p.Status.ContainerStatuses {
			if p.Status.ContainerStatuses[j].Name == "memcached" {
				p.Status.ContainerStatuses[j].Resources = p.Spec.Containers[0].Resources.DeepCopy()
			}
		}
		g.Expect(k8sClient.Status().Update(ctx, p)).To(Succeed())
	}, timeout, interval).Should(Succeed())
}

// memoryLimitMB is the item memory of the memcached at host, by its own stats.
func memoryLimitMB(host string) int {
	GinkgoHelper()
	s, err := memcache.ReadStats(context.Background(), memcache.Server{Addr: statsAddr(host)}, time.Second)
	Expect(err).NotTo(HaveOccurred())
	return int(s.LimitMaxBytes >> 20)
}

// storeKeys stores n small keys prefix-0 ... in the memcached at host.
func storeKeys(host, prefix string, n int) {
	GinkgoHelper()
	conn, err := net.Dial("tcp", statsAddr(host))
	Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	r := bufio.NewReader(conn)
	for i := range n {
		v := fmt.Sprintf("value-%d", i)
		_, err := fmt.Fprintf(conn, "set %s-%d 0 0 %d\r\n%s\r\n", prefix, i, len(v), v)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.ReadString('\n')).To(Equal("STORED\r\n"))
	}
}

// countKeys counts the keys prefix-0 ... of storeKeys that the memcached at host still holds.
func countKeys(host, prefix string, n int) int {
	GinkgoHelper()
	conn, err := net.Dial("tcp", statsAddr(host))
	Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	r := bufio.NewReader(conn)
	found := 0
	for i := range n {
		_, err := fmt.Fprintf(conn, "get %s-%d\r\n", prefix, i)
		Expect(err).NotTo(HaveOccurred())
		for {
			line, err := r.ReadString('\n')
			Expect(err).NotTo(HaveOccurred())
			if line == "END\r\n" {
				break
			}
			if strings.HasPrefix(line, "VALUE ") {
				found++
				_, err := r.ReadString('\n')
				Expect(err).NotTo(HaveOccurred())
			}
		}
	}
	return found
}

// fill stores about size bytes of 100 KB items, which stay, in the memcached at host.
func fill(host string, size int) {
	GinkgoHelper()
	conn, err := net.Dial("tcp", statsAddr(host))
	Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	r := bufio.NewReader(conn)
	value := strings.Repeat("x", 100_000)
	for i := range size / len(value) {
		_, err := fmt.Fprintf(conn, "set fill-%d 0 0 %d\r\n%s\r\n", i, len(value), value)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.ReadString('\n')).To(Equal("STORED\r\n"))
	}
}

var _ = json.Marshal
var _ = cachev1.GroupVersion
