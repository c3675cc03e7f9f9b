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
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/labels"
)

// Changes of the servers' template that keep the keys (servers/rollout.go, servers/step.go): metadata written onto
// the running pods, and, with keepCacheAcross Restarts, a new image as a restart of memcached in
// its pod from its memory file. Real memcacheds stand in for the pods'; the specs play the
// StatefulSet controller and the kubelet (envtest runs neither), the kubelet as it restarts a
// container whose image changed: memcached stopped as the chart's shell stops it (SIGUSR1, which
// saves its items) and started again with its file.
var _ = Describe("Changes of the servers that keep their keys", func() {
	ctx := context.Background()

	It("writes pod annotations and labels onto the running servers: none replaced or restarted, every key kept", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "metadata"}
		hosts := []string{startMemcached(64), startMemcached(64)}
		createMemcached(ctx, key, "  replicaCount: 2\n  minReadySeconds: 0\n")
		servers := playServers(ctx, key, hosts, "rev-a")
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionAvailable), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		for _, h := range hosts {
			storeKeys(h, "k", 500)
		}
		uids := []types.UID{serverPod(Default, ctx, servers, 0).UID, serverPod(Default, ctx, servers, 1).UID}

		updateSpec(ctx, key, "  replicaCount: 2\n  minReadySeconds: 0\n  podAnnotations: {team: web}\n  podLabels: {tier: cache}\n")
		Eventually(func(g Gomega) {
			s := getStatefulSet(g, ctx, servers)
			g.Expect(changeOf(g, ctx, servers)).To(And(HaveField("Way", cachev1.WayInPlace), HaveField("Phase", cachev1.RolloutChanging)))
			g.Expect(heldServers(ctx, servers)(g)).To(BeEquivalentTo(2), "both servers held")
			g.Expect(s.Spec.Template.Annotations).To(HaveKeyWithValue("team", "web"))
		}, timeout, interval).Should(Succeed())
		setServerRevisions(ctx, servers, "rev-a", "rev-b", 0)

		Eventually(func(g Gomega) {
			g.Expect(heldServers(ctx, servers)(g)).To(BeZero())
			g.Expect(changeOf(g, ctx, servers)).To(HaveField("Phase", cachev1.RolloutComplete))
			for i := range hosts {
				p := serverPod(g, ctx, servers, i)
				g.Expect(p.Annotations).To(HaveKeyWithValue("team", "web"))
				g.Expect(p.Labels).To(And(HaveKeyWithValue("tier", "cache"), HaveKeyWithValue(appsv1.StatefulSetRevisionLabel, "rev-b"),
					HaveKeyWithValue(appsv1.StatefulSetPodNameLabel, p.Name)), "the StatefulSet controller's labels stay")
				g.Expect(p.UID).To(Equal(uids[i]), "the same pod")
			}
		}, timeout, interval).Should(Succeed())
		setServerRevisions(ctx, servers, "rev-b", "rev-b", 2)
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCacheWarm), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", cachev1.WayInPlace),
			HaveField("Message", And(ContainSubstring("pod labels or annotations"), ContainSubstring("no server restarted")))))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement(cachev1.WayInPlace))
		for _, h := range hosts {
			Expect(countKeys(h, "k", 500)).To(Equal(500), "no key lost")
		}

		By("an annotation removed goes from the pods too")
		updateSpec(ctx, key, "  replicaCount: 2\n  minReadySeconds: 0\n  podLabels: {tier: cache}\n")
		Eventually(func(g Gomega) {
			g.Expect(heldServers(ctx, servers)(g)).To(BeEquivalentTo(2))
			g.Expect(getStatefulSet(g, ctx, servers).Spec.Template.Annotations).NotTo(HaveKey("team"), "Helm applied the change")
		}, timeout, interval).Should(Succeed())
		setServerRevisions(ctx, servers, "rev-b", "rev-c", 0)
		Eventually(func(g Gomega) {
			for i := range hosts {
				p := serverPod(g, ctx, servers, i)
				g.Expect(p.Annotations).NotTo(HaveKey("team"))
				g.Expect(p.Labels).To(And(HaveKeyWithValue("tier", "cache"), HaveKeyWithValue(appsv1.StatefulSetRevisionLabel, "rev-c")))
			}
		}, timeout, interval).Should(Succeed())
	})

	It("restarts each server in its pod with a new image, one at a time and the highest first, each with its items", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "warm"}
		warm := []*warmMemcached{startWarmMemcached(64), startWarmMemcached(64)}
		createMemcached(ctx, key, "  replicaCount: 2\n  minReadySeconds: 0\n  keepCacheAcross: Restarts\n  image: {tag: 1.6.38}\n")
		servers := playServers(ctx, key, []string{warm[0].host, warm[1].host}, "rev-a")
		Expect(getStatefulSet(Default, ctx, servers).Spec.Template.Spec.Containers[0].Args).To(ContainElements("-e", "/var/cache/memcached/items"))
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionAvailable), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		for _, w := range warm {
			storeKeys(w.host, "k", 1000)
		}

		updateSpec(ctx, key, "  replicaCount: 2\n  minReadySeconds: 0\n  keepCacheAcross: Restarts\n  image: {tag: 1.6.39}\n")
		Eventually(func(g Gomega) {
			s := getStatefulSet(g, ctx, servers)
			g.Expect(changeOf(g, ctx, servers)).To(HaveField("Way", cachev1.WayWarmRestart))
			g.Expect(s.Spec.Template.Spec.Containers[0].Image).To(HaveSuffix(":1.6.39"), "Helm applied the change")
			g.Expect(heldServers(ctx, servers)(g)).To(BeEquivalentTo(2))
		}, timeout, interval).Should(Succeed())
		setServerRevisions(ctx, servers, "rev-a", "rev-b", 0)

		svc := &corev1.Service{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-memcached"}, svc)).To(Succeed())
		Expect(svc.Spec.Selector).To(HaveKeyWithValue(labels.Serving, "true"), "the ClusterIP Service selects the servers that serve")
		Expect(servingLabels(ctx, servers, 2)).To(Equal([]string{"true", "true"}))

		By("server 1 first: out of the Service, then its image changes; server 0's not until server 1 serves again")
		awaitImage(ctx, servers, 1, ":1.6.39")
		Expect(servingLabels(ctx, servers, 2)).To(Equal([]string{"true", "false"}), "server 1 left the Service before its image changed")
		By("an image change that did not reach the pod is made again, the server still out of the Service")
		Eventually(func(g Gomega) {
			p := serverPod(g, ctx, servers, 1)
			p.Spec.Containers[0].Image = strings.Replace(p.Spec.Containers[0].Image, ":1.6.39", ":1.6.38", 1)
			g.Expect(k8sClient.Update(ctx, p)).To(Succeed())
		}, timeout, interval).Should(Succeed())
		awaitImage(ctx, servers, 1, ":1.6.39")
		Expect(servingLabels(ctx, servers, 2)).To(Equal([]string{"true", "false"}))
		Consistently(serverImage(ctx, servers, 0), 2*time.Second, interval).Should(HaveSuffix(":1.6.38"))
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCacheWarm), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", cachev1.WayWarmRestart),
			HaveField("Message", ContainSubstring("memcached 1.6.38 → 1.6.39: restarting the servers in their pods one at a time"))))
		kubeletRestarts(ctx, servers, 1, warm[1], 64)

		By("then server 0, once server 1 is back in the Service")
		awaitImage(ctx, servers, 0, ":1.6.39")
		Expect(servingLabels(ctx, servers, 2)).To(Equal([]string{"false", "true"}))
		kubeletRestarts(ctx, servers, 0, warm[0], 64)
		Eventually(func() []string { return servingLabels(ctx, servers, 2) }, timeout, interval).Should(Equal([]string{"true", "true"}))

		Eventually(func(g Gomega) {
			g.Expect(changeOf(g, ctx, servers)).To(HaveField("Phase", cachev1.RolloutComplete))
			g.Expect(heldServers(ctx, servers)(g)).To(BeZero())
			for i := range warm {
				g.Expect(serverPod(g, ctx, servers, i).Labels).To(HaveKeyWithValue(appsv1.StatefulSetRevisionLabel, "rev-b"))
			}
		}, timeout, interval).Should(Succeed())
		setServerRevisions(ctx, servers, "rev-b", "rev-b", 2)
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCacheWarm), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", cachev1.WayWarmRestart),
			HaveField("Message", ContainSubstring("every server restarted in its pod with its items"))))
		for _, w := range warm {
			Expect(countKeys(w.host, "k", 1000)).To(Equal(1000), "every key restored")
		}
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement(cachev1.WayWarmRestart))
	})

	It("labels the running servers as serving before the Service selects by it, when warm restarts are turned on", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "turn-warm"}
		createMemcached(ctx, key, "  replicaCount: 2\n  minReadySeconds: 0\n")
		servers := playServers(ctx, key, []string{startMemcached(64), startMemcached(64)}, "rev-a")
		Expect(servingLabels(ctx, servers, 2)).To(Equal([]string{"", ""}), "without warm restarts the servers have no such label")

		updateSpec(ctx, key, "  replicaCount: 2\n  minReadySeconds: 0\n  keepCacheAcross: Restarts\n")
		Eventually(func(g Gomega) map[string]string {
			svc := &corev1.Service{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-memcached"}, svc)).To(Succeed())
			return svc.Spec.Selector
		}, timeout, interval).Should(HaveKeyWithValue(labels.Serving, "true"))
		Expect(servingLabels(ctx, servers, 2)).To(Equal([]string{"true", "true"}),
			"the servers made from the old template were labelled before Helm applied the Service: it never selected none")
	})

	It("says which server started empty when memcached did not restore its memory file", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "mismatch"}
		warm := startWarmMemcached(64)
		createMemcached(ctx, key, "  replicaCount: 1\n  minReadySeconds: 0\n  keepCacheAcross: Restarts\n  image: {tag: 1.6.38}\n")
		servers := playServers(ctx, key, []string{warm.host}, "rev-a")
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionAvailable), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		storeKeys(warm.host, "k", 1000)

		updateSpec(ctx, key, "  replicaCount: 1\n  minReadySeconds: 0\n  keepCacheAcross: Restarts\n  image: {tag: 1.6.39}\n")
		Eventually(func(g Gomega) {
			g.Expect(heldServers(ctx, servers)(g)).To(BeEquivalentTo(1))
			g.Expect(getStatefulSet(g, ctx, servers).Spec.Template.Spec.Containers[0].Image).To(HaveSuffix(":1.6.39"), "Helm applied the change")
		}, timeout, interval).Should(Succeed())
		setServerRevisions(ctx, servers, "rev-a", "rev-b", 0)
		awaitImage(ctx, servers, 0, ":1.6.39")
		// The file was saved by a memcached of other settings: memcached starts clean.
		kubeletRestarts(ctx, servers, 0, warm, 80)

		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCacheWarm), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", cachev1.WayStartedEmpty),
			HaveField("Message", And(ContainSubstring("server mismatch-memcached-0 started empty"), ContainSubstring("held 1000 items before and 0 after")))))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement(cachev1.WayStartedEmpty))
		Eventually(func(g Gomega) *cachev1.ServersChange { return changeOf(g, ctx, servers) }, timeout, interval).Should(
			HaveField("Phase", cachev1.RolloutComplete), "the change is made all the same")
		Expect(countKeys(warm.host, "k", 1000)).To(BeZero())
	})
})

var _ = Describe("Servers that start empty outside a change", func() {
	ctx := context.Background()

	It("says which server started empty after memcached crashed, and why", func() {
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "crash"}
		server := startWarmMemcached(64)
		server.file = "" // keepCacheAcross MemoryChanges: no memory file
		server.restart(64)
		createMemcached(ctx, key, "  replicaCount: 1\n  minReadySeconds: 0\n")
		servers := playServers(ctx, key, []string{server.host}, "rev-a")
		storeKeys(server.host, "k", 1000)
		fill(server.host, 2<<20) // a figure in status (whole MiB) that says so
		// The stats controller has read the server with its items.
		setPodReady(ctx, key.Namespace, servers.Name+"-0", false)
		setPodReady(ctx, key.Namespace, servers.Name+"-0", true)
		Eventually(func(g Gomega) string {
			st := memcachedStatus(ctx, key)(g)
			g.Expect(st.Stats).NotTo(BeNil())
			return st.Stats.MemoryUsed.String()
		}, timeout, interval).ShouldNot(Equal("0"))
		Consistently(memcachedCondition(ctx, key, cachev1.ConditionCacheWarm), time.Second, interval).Should(HaveField("Type", BeEmpty()),
			"nothing to say before anything happened")

		By("memcached is killed at its memory limit and restarts in its pod, empty")
		setPodReady(ctx, key.Namespace, servers.Name+"-0", false)
		Expect(server.cmd.Process.Kill()).To(Succeed())
		_ = server.cmd.Wait()
		server.start(64)
		Eventually(func(g Gomega) {
			p := serverPod(g, ctx, servers, 0)
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			cs := &p.Status.ContainerStatuses[0]
			cs.RestartCount++
			cs.State = server.containerStarted()
			cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}
			g.Expect(k8sClient.Status().Update(ctx, p)).To(Succeed())
		}, timeout, interval).Should(Succeed())

		Eventually(memcachedCondition(ctx, key, cachev1.ConditionCacheWarm), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", cachev1.WayStartedEmpty),
			HaveField("Message", And(ContainSubstring("server crash-memcached-0 started empty"), ContainSubstring("OOMKilled, exit code 137"),
				ContainSubstring("keepCacheAcross MemoryChanges")))))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement(cachev1.WayStartedEmpty))
	})
})

// warmMemcached is a memcached with its memory file (-e), as with keepCacheAcross Restarts, that
// the specs restart as the kubelet would; without a file ("") it runs as with MemoryChanges.
type warmMemcached struct {
	host, file string
	cmd        *exec.Cmd
	// born is when its first process started: one that restores its file goes on with its clock.
	born time.Time
	// started is when its current process started: the kubelet's record of its container's start
	// (containerStarted), taken before the process as the kubelet takes it, not when a spec gets
	// round to writing it (a slow spec would make a fresh memcached look restored).
	started time.Time
}

// containerStarted is the container state the kubelet reports for w's current process.
func (w *warmMemcached) containerStarted() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(w.started)}}
}

// startWarmMemcached runs memcached with mb MiB of item memory and its memory file on a tmpfs,
// at statsPort of a loopback address of its own, until the spec ends.
func startWarmMemcached(mb int) *warmMemcached {
	GinkgoHelper()
	dir, err := os.MkdirTemp("/dev/shm", "memcached-warm-")
	Expect(err).NotTo(HaveOccurred(), "memcached's memory file goes on a tmpfs, as on the pod's memory-backed emptyDir")
	Expect(os.Chmod(dir, 0o777)).To(Succeed()) // memcached runs as nobody
	DeferCleanup(os.RemoveAll, dir)
	w := &warmMemcached{host: nextLoopbackHost(), file: filepath.Join(dir, "items")}
	w.start(mb)
	DeferCleanup(func() {
		if w.cmd != nil {
			_ = w.cmd.Process.Kill()
			_ = w.cmd.Wait()
		}
	})
	return w
}

func (w *warmMemcached) start(mb int) {
	GinkgoHelper()
	bin, err := exec.LookPath("memcached")
	Expect(err).NotTo(HaveOccurred(), "the specs run a real memcached: apt-get install memcached (hack/packages.txt)")
	args := []string{"-l", w.host, "-p", strconv.Itoa(statsPort), "-U", "0", "-m", strconv.Itoa(mb), "-u", "nobody"}
	if w.file != "" {
		args = append(args, "-e", w.file)
	}
	w.started = time.Now()
	if w.born.IsZero() {
		w.born = w.started
	}
	w.cmd = exec.Command(bin, args...)
	w.cmd.Stdout, w.cmd.Stderr = GinkgoWriter, GinkgoWriter
	Expect(w.cmd.Start()).To(Succeed())
	Eventually(func() error { return dialOnce(statsAddr(w.host)) }, 10*time.Second, 50*time.Millisecond).Should(Succeed())
}

// replace plays a server's pod replaced: its memcached killed, its memory file gone with the pod's
// memory, and a new memcached started empty.
func (w *warmMemcached) replace(mb int) {
	GinkgoHelper()
	_ = w.cmd.Process.Kill()
	_ = w.cmd.Wait()
	if w.file != "" {
		Expect(os.RemoveAll(w.file)).To(Succeed())
		_ = os.Remove(w.file + ".meta")
	}
	w.born = time.Time{}
	w.start(mb)
}

// restart stops memcached as the chart's shell does when Kubernetes stops the container (SIGUSR1:
// it saves its items and exits) and starts it again with mb MiB, more than a second later (see
// memcached.warmStart).
func (w *warmMemcached) restart(mb int) {
	GinkgoHelper()
	Expect(w.cmd.Process.Signal(syscall.SIGUSR1)).To(Succeed())
	Expect(w.cmd.Wait()).To(Succeed())
	if w.file != "" {
		Expect(w.file + ".meta").To(BeAnExistingFile())
		time.Sleep(1100 * time.Millisecond) // memcached refuses a file saved in the second it starts
		// A restored memcached tells its return by a start well before its container's (the
		// operator's judgement, rollout.Restored): as a server that ran a while before it.
		time.Sleep(time.Until(w.born.Add(7 * time.Second)))
	}
	w.start(mb)
}

// kubeletRestarts plays the kubelet that restarts server i's memcached container for its new
// image: not ready, memcached restarted with mb MiB (w), then ready with one more restart.
func kubeletRestarts(ctx context.Context, s *appsv1.StatefulSet, i int, w *warmMemcached, mb int) {
	GinkgoHelper()
	setPodReady(ctx, s.Namespace, fmt.Sprintf("%s-%d", s.Name, i), false)
	w.restart(mb)
	Eventually(func(g Gomega) {
		p := serverPod(g, ctx, s, i)
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		for j := range p.Status.ContainerStatuses {
			if cs := &p.Status.ContainerStatuses[j]; cs.Name == "memcached" {
				cs.Image, cs.RestartCount, cs.State = p.Spec.Containers[0].Image, cs.RestartCount+1, w.containerStarted()
			}
		}
		g.Expect(k8sClient.Status().Update(ctx, p)).To(Succeed())
	}, timeout, interval).Should(Succeed())
}

// servingLabels are the labels.Serving of the StatefulSet's pods 0 to n-1.
func servingLabels(ctx context.Context, s *appsv1.StatefulSet, n int) []string {
	GinkgoHelper()
	var out []string
	for i := range n {
		out = append(out, serverPod(Default, ctx, s, i).Labels[labels.Serving])
	}
	return out
}

// serverImage is the memcached image in the spec of the StatefulSet's pod i.
func serverImage(ctx context.Context, s *appsv1.StatefulSet, i int) func(g Gomega) string {
	return func(g Gomega) string { return serverPod(g, ctx, s, i).Spec.Containers[0].Image }
}

// awaitImage waits until the operator has changed the memcached image of server i's pod to one
// ending in suffix, in place.
func awaitImage(ctx context.Context, s *appsv1.StatefulSet, i int, suffix string) {
	GinkgoHelper()
	Eventually(serverImage(ctx, s, i), timeout, interval).Should(HaveSuffix(suffix))
	Expect(serverPod(Default, ctx, s, i).Labels).To(HaveKeyWithValue("app.kubernetes.io/version", suffix[1:]), "its labels are written first")
}

// dialOnce connects to addr and hangs up.
func dialOnce(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}
