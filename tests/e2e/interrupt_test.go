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
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// The change × interruption matrix: every change the operator makes to a cache's servers in
// place, interrupted mid-step the way production interrupts it (a pod evicted as a drain does, the
// operator's pod deleted, a second change, a second writer of the StatefulSet), on a real kubelet.
// Each cell stores 30000 keys over the 3 servers with an application's sharding client first and
// reads them back at the end, and holds the cell's end state to the letter: every server on the
// template asked for (the StatefulSet's current revision is its update revision; each server's
// image, labels and memcached's own item memory), the servers whose pods were not replaced with
// at least 99% of their keys, each replaced server named with its true reason, Progressing ended
// within 30 s of the last server's step, and no server left out of the Service.

// interruption is one cell of the matrix.
type interruption struct {
	// warm: keepCacheAcross Restarts (64 MiB), else MemoryChanges (32 MiB).
	warm bool
	// change is the spec change (a merge patch of spec).
	change string
	// mid says the change has come to the step to interrupt: server 2 (the first, the highest)
	// is being changed.
	mid func(g Gomega, pod *corev1.Pod) bool
	// interrupt interrupts it; it returns the servers whose pods it replaced.
	interrupt func(ns string) []string
	// end checks what every server runs at the end.
	end func(g Gomega, ns string, pod *corev1.Pod, stats map[string]string)
}

var _ = Describe("Changes of the servers, interrupted", func() {
	retagged := os.Getenv("E2E_MEMCACHED_RETAGGED_IMG")
	newImage := func(g Gomega, p *corev1.Pod) bool { return p.Spec.Containers[0].Image == retagged }
	runsRetagged := func(g Gomega, _ string, p *corev1.Pod, _ map[string]string) {
		g.Expect(p.Spec.Containers[0].Image).To(Equal(retagged), "%s runs the new image", p.Name)
	}
	imageTag := func() string { _, tag := splitImage(retagged); return `{"image":{"tag":"` + tag + `"}}` }
	memory48 := func(g Gomega, _ string, p *corev1.Pod, stats map[string]string) {
		g.Expect(stats).To(HaveKeyWithValue("limit_maxbytes", strconv.Itoa(48<<20)), "%s's memcached runs with 48 MiB", p.Name)
		g.Expect(p.Spec.Containers[0].Resources.Limits.Memory().String()).To(Equal("80Mi"), "%s resized", p.Name)
	}
	labelled := func(g Gomega, _ string, p *corev1.Pod, _ map[string]string) {
		g.Expect(p.Labels).To(HaveKeyWithValue("tier", "cache"), "%s has the new label", p.Name)
	}

	DescribeTable("keeps its promise and finishes the change",
		func(cell interruption) {
			Expect(retagged).NotTo(BeEmpty(), "E2E_MEMCACHED_RETAGGED_IMG names the memcached image under a second tag: run `make test-e2e`")
			withOperator()
			proveInterrupted(cell)
		},
		Entry("a new image restarted warm, its first server's pod evicted mid-restart", interruption{warm: true, change: imageTag(), mid: newImage,
			interrupt: func(ns string) []string { evict(ns, "cache-memcached-2"); return []string{"cache-memcached-2"} }, end: runsRetagged}),
		Entry("a new image restarted warm, a label change mid-restart", interruption{warm: true, change: imageTag(), mid: newImage,
			interrupt: func(ns string) []string {
				kubectl("-n", ns, "patch", "memcached", "cache", "--type=merge", "-p", `{"spec":{"podLabels":{"tier":"cache"}}}`)
				return nil
			},
			end: func(g Gomega, ns string, p *corev1.Pod, stats map[string]string) {
				runsRetagged(g, ns, p, stats)
				labelled(g, ns, p, stats)
			}}),
		Entry("the memory grown in place, a server's pod evicted mid-resize", interruption{change: `{"memcached":{"maxMemoryMB":48}}`,
			mid: func(g Gomega, p *corev1.Pod) bool {
				return p.Spec.Containers[0].Resources.Limits.Memory().String() == "80Mi"
			},
			interrupt: func(ns string) []string { evict(ns, "cache-memcached-0"); return []string{"cache-memcached-0"} }, end: memory48}),
		Entry("pod labels written in place while a second writer changes the StatefulSet", interruption{change: `{"podLabels":{"tier":"cache"}}`,
			mid: func(Gomega, *corev1.Pod) bool { return true },
			interrupt: func(ns string) []string {
				// Another writer of the StatefulSet's spec between every read and write of the
				// operator's: its writes on the version it read conflict, and are made again.
				go secondWriter(ns, "cache-memcached", 20*time.Second)
				return nil
			}, end: labelled}),
		Entry("a new image restarted warm, the operator's pod deleted mid-restart", Serial, interruption{warm: true, change: imageTag(), mid: newImage,
			interrupt: func(string) []string {
				kubectl("-n", operatorNamespace, "delete", "pod", "-l", "control-plane=controller-manager", "--wait=false")
				return nil
			}, end: runsRetagged}),
	)
})

// proveInterrupted runs one cell of the matrix in a namespace of its own.
func proveInterrupted(cell interruption) {
	ns := fmt.Sprintf("memcached-interrupt-l%d", CurrentSpecReport().LeafNodeLocation.LineNumber)
	kubectl("create", "namespace", ns)
	DeferCleanup(deleteNamespace, ns)
	key := types.NamespacedName{Namespace: ns, Name: "cache"}
	selector := map[string]string{"app.kubernetes.io/instance": key.Name, "app.kubernetes.io/name": "memcached"}
	repo, tag := splitImage(memcachedImage)
	spec := cachev1.MemcachedSpec{ReplicaCount: ptr.To[int32](3), MinReadySeconds: ptr.To[int32](2),
		Image: &cachev1.ImageSpec{Repository: repo, Tag: tag}, Memcached: &cachev1.MemcachedServer{MaxMemoryMB: 32}}
	if cell.warm {
		spec.KeepCacheAcross, spec.Memcached.MaxMemoryMB = cachev1.KeepAcrossRestarts, 64
	}
	Expect(k8s.Create(ctx(), &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}, Spec: spec})).To(Succeed())
	servers := awaitServers(key, 3)
	list := strings.Join(servers, ",")

	By("storing 30000 keys over the 3 servers")
	var stored clientCounts
	runClient(ns, "store", &stored, "-servers", list, "-op", "store", "-keys", "30000")
	Expect(stored).To(And(HaveField("Hits", 30000), HaveField("Failures", 0)))
	var before serverFigures
	runClient(ns, "stats-before", &before, "-servers", list, "-op", "stats")
	uids := podUIDs(ns, selector)

	By("the change, interrupted mid-step")
	kubectl("-n", ns, "patch", "memcached", key.Name, "--type=merge", "-p", `{"spec":`+cell.change+`}`)
	Eventually(func(g Gomega) bool {
		p := &corev1.Pod{}
		g.Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: ns, Name: "cache-memcached-2"}, p)).To(Succeed())
		return cell.mid(g, p)
	}, timeout, 100*time.Millisecond).Should(BeTrue(), "the change reaches its first server")
	replaced := cell.interrupt(ns)

	By("the change finishes: every server on the template asked for")
	var mc *cachev1.Memcached
	Eventually(func(g Gomega) {
		mc = &cachev1.Memcached{}
		g.Expect(k8s.Get(ctx(), key, mc)).To(Succeed())
		g.Expect(mc.Status.Rollout).NotTo(BeNil())
		g.Expect(mc.Status.Rollout.Change).NotTo(BeNil())
		g.Expect(mc.Status.Rollout.Change.Phase).To(Equal(cachev1.RolloutComplete), "the change was made in place: %+v", mc.Status.Rollout.Change)
		g.Expect(mc.Status.Conditions).To(ContainElement(And(HaveField("Type", "Progressing"), HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "Complete"))))
		s := &appsv1.StatefulSet{}
		g.Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: ns, Name: "cache-memcached"}, s)).To(Succeed())
		g.Expect(s.Status.CurrentRevision).To(Equal(s.Status.UpdateRevision), "the StatefulSet's servers all run its template")
		g.Expect(s.Status.UpdatedReplicas).To(BeEquivalentTo(3))
		g.Expect(ptr.Deref(s.Spec.UpdateStrategy.RollingUpdate, appsv1.RollingUpdateStatefulSetStrategy{}).Partition).To(Or(BeNil(), HaveValue(BeZero())), "no hold left")
	}, 4*time.Minute, poll).Should(Succeed())
	var after serverFigures
	runClient(ns, "stats-after", &after, "-servers", list, "-op", "stats")
	pods := &corev1.PodList{}
	Expect(k8s.List(ctx(), pods, client.InNamespace(ns), client.MatchingLabels(selector))).To(Succeed())
	Expect(pods.Items).To(HaveLen(3))
	lastStep := mc.Status.Rollout.Change.CompletionTime.Time
	for _, p := range pods.Items {
		cell.end(Default, ns, &p, after[serverOf(servers, p.Name)])
		if cell.warm {
			Expect(p.Labels).To(HaveKeyWithValue("cache.my.domain/serving", "true"), "%s serves: no server left out of the Service", p.Name)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.LastTransitionTime.After(lastStep) {
				lastStep = c.LastTransitionTime.Time
			}
		}
		if !slices.Contains(replaced, p.Name) {
			Expect(p.UID).To(Equal(uids[p.Name]), "%s's pod was not replaced by the change", p.Name)
		}
	}
	progressing := memcachedConditionOf(Default, key, "Progressing")
	Expect(progressing.LastTransitionTime.Sub(lastStep)).To(BeNumerically("<=", 30*time.Second),
		"Progressing ended at %s, within 30 s of the last server's step at %s", progressing.LastTransitionTime, lastStep)

	By("reading the keys back: the servers not replaced kept theirs, each replaced one is named and why")
	var read clientCounts
	runClient(ns, "read", &read, "-servers", list, "-op", "read", "-keys", "30000")
	Expect(read.Failures).To(BeZero())
	Expect(read.Wrong).To(BeZero(), "no stale value")
	for _, server := range servers {
		held, _ := strconv.Atoi(before[server]["curr_items"])
		name := podOf(server)
		if slices.Contains(replaced, name) {
			Expect(read.PerServer[server]).To(BeNumerically(">=", held*9/10), "%s's pod was replaced: it started empty", name)
			Expect(mc.Status.Rollout.Servers).To(ContainElement(And(HaveField("Name", name),
				HaveField("StartedEmpty", HaveField("Reason", cachev1.EmptyPodReplaced)))), "status.rollout names %s", name)
			cacheWarm := memcachedConditionOf(Default, key, "CacheWarm")
			Expect(cacheWarm.Message).To(ContainSubstring("server %s started empty: its pod was replaced", name))
			continue
		}
		Expect(read.PerServer[server]).To(BeNumerically("<=", held/100), "%s kept at least 99%% of its %d keys", name, held)
	}
}

// serverOf is the server of the list whose pod is named name.
func serverOf(servers []string, name string) string {
	for _, s := range servers {
		if podOf(s) == name {
			return s
		}
	}
	return ""
}

// podOf is the pod name of a server address (<pod>.<headless service>...:port).
func podOf(server string) string { return strings.SplitN(server, ".", 2)[0] }

// evict evicts a pod through the eviction API, as kubectl drain does: a refusal for the
// PodDisruptionBudget (429) is tried again.
func evict(ns, name string) {
	GinkgoHelper()
	Eventually(func() error {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		err := k8s.SubResource("eviction").Create(ctx(), pod, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		if apierrors.IsTooManyRequests(err) {
			return err
		}
		return client.IgnoreNotFound(err)
	}, timeout, 200*time.Millisecond).Should(Succeed(), "pod %s/%s evicted", ns, name)
}

// secondWriter changes the spec of StatefulSet ns/name (its revision history limit, which the
// chart leaves alone) every 100 ms for d.
func secondWriter(ns, name string, d time.Duration) {
	defer GinkgoRecover()
	c, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for i := 0; c.Err() == nil; i++ {
		s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		patch := fmt.Sprintf(`{"spec":{"revisionHistoryLimit":%d}}`, 10+i%2)
		_ = k8s.Patch(c, s, client.RawPatch(types.MergePatchType, []byte(patch)))
		time.Sleep(100 * time.Millisecond)
	}
}
