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
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// How soon status says a change of the servers is done, on a real kubelet: for each change made
// in place, when the cluster had made it (the last pod with it, as the kubelet reports it) and when
// status said it was done, both from the moment the CR was patched, polled every 50 ms. A
// benchmark (label "bench": `make bench-rollout`, in `make bench`), not a timed test.
var _ = Describe("How soon status says a change of the servers is done", Label("bench"), Serial, func() {
	It("measures in-place metadata, memory grown and shrunk in place, and a warm restart", func() {
		retagged := os.Getenv("E2E_MEMCACHED_RETAGGED_IMG")
		Expect(retagged).NotTo(BeEmpty(), "E2E_MEMCACHED_RETAGGED_IMG names the memcached image under a second tag")
		withOperator()
		repo, tag := splitImage(memcachedImage)
		_, newTag := splitImage(retagged)
		type row struct {
			change     string
			made, done time.Duration
		}
		var rows []row
		// measure patches the CR and waits until made holds for every pod and done for the
		// Memcached, with status.rollout about this change (since the patch).
		measure := func(ns string, change, patch string, made func(p *corev1.Pod) bool, done func(mc *cachev1.Memcached) bool) {
			GinkgoHelper()
			key := types.NamespacedName{Namespace: ns, Name: "cache"}
			start := time.Now()
			kubectl("-n", ns, "patch", "memcached", key.Name, "--type=merge", "-p", `{"spec":`+patch+`}`)
			var madeAt, doneAt time.Duration
			Eventually(func(g Gomega) {
				now := time.Since(start)
				if madeAt == 0 {
					pods := &corev1.PodList{}
					g.Expect(k8s.List(ctx(), pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": key.Name})).To(Succeed())
					all := len(pods.Items) == 3
					for i := range pods.Items {
						all = all && made(&pods.Items[i])
					}
					if all {
						madeAt = now
					}
				}
				if doneAt == 0 {
					mc := &cachev1.Memcached{}
					g.Expect(k8s.Get(ctx(), key, mc)).To(Succeed())
					c := mc.Status.Rollout
					if c != nil && c.Change != nil && !c.Change.Since.Before(&metav1.Time{Time: start.Truncate(time.Second)}) && done(mc) {
						doneAt = now
					}
				}
				g.Expect(madeAt).NotTo(BeZero(), "the cluster made it")
				g.Expect(doneAt).NotTo(BeZero(), "status says it is done")
			}, 5*time.Minute, 50*time.Millisecond).Should(Succeed())
			rows = append(rows, row{change: change, made: madeAt, done: doneAt})
		}
		condition := func(mc *cachev1.Memcached, typ, status, reason string) bool {
			for _, c := range mc.Status.Conditions {
				if c.Type == typ {
					return string(c.Status) == status && c.Reason == reason
				}
			}
			return false
		}
		complete := func(mc *cachev1.Memcached) bool {
			return mc.Status.Rollout != nil && mc.Status.Rollout.Change != nil && mc.Status.Rollout.Change.Phase == cachev1.RolloutComplete &&
				condition(mc, "Progressing", "False", "Complete")
		}
		create := func(ns string, warm bool) {
			GinkgoHelper()
			kubectl("create", "namespace", ns)
			DeferCleanup(deleteNamespace, ns)
			spec := cachev1.MemcachedSpec{ReplicaCount: ptr.To[int32](3), MinReadySeconds: ptr.To[int32](2),
				Image: &cachev1.ImageSpec{Repository: repo, Tag: tag}, Memcached: &cachev1.MemcachedServer{MaxMemoryMB: 32}}
			if warm {
				spec.KeepCacheAcross, spec.Memcached.MaxMemoryMB = cachev1.KeepAcrossRestarts, 64
			}
			Expect(k8s.Create(ctx(), &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"}, Spec: spec})).To(Succeed())
			awaitServers(types.NamespacedName{Namespace: ns, Name: "cache"}, 3)
		}
		memoryLimit := func(limit string) func(p *corev1.Pod) bool {
			return func(p *corev1.Pod) bool {
				for _, cs := range p.Status.ContainerStatuses {
					if cs.Name == "memcached" && cs.Resources != nil {
						return cs.Resources.Limits.Memory().String() == limit
					}
				}
				return false
			}
		}

		create("memcached-latency", false)
		measure("memcached-latency", "pod annotations, in place", `{"podAnnotations":{"example.com/team":"web"}}`,
			func(p *corev1.Pod) bool { return p.Annotations["example.com/team"] == "web" }, complete)
		measure("memcached-latency", "item memory 32 → 48 MiB, in place", `{"memcached":{"maxMemoryMB":48}}`, memoryLimit("80Mi"),
			func(mc *cachev1.Memcached) bool {
				return complete(mc) && condition(mc, "Resizing", "False", "ResizedInPlace")
			})
		measure("memcached-latency", "item memory 48 → 32 MiB, in place", `{"memcached":{"maxMemoryMB":32}}`, memoryLimit("64Mi"),
			func(mc *cachev1.Memcached) bool {
				return complete(mc) && condition(mc, "Resizing", "False", "ResizedInPlace")
			})
		create("memcached-latency-warm", true)
		measure("memcached-latency-warm", "a new image, 3 warm restarts", `{"image":{"tag":"`+newTag+`"}}`,
			func(p *corev1.Pod) bool {
				for _, cs := range p.Status.ContainerStatuses {
					if cs.Name == "memcached" {
						return p.Spec.Containers[0].Image == retagged && cs.Ready && cs.RestartCount > 0
					}
				}
				return false
			},
			func(mc *cachev1.Memcached) bool {
				return complete(mc) && condition(mc, "CacheWarm", "True", "WarmRestart")
			})

		var table strings.Builder
		table.WriteString("| change (3 servers) | made on the cluster | status says done | status after the cluster |\n|---|---|---|---|\n")
		for _, r := range rows {
			fmt.Fprintf(&table, "| %s | %.1f s | %.1f s | %.1f s |\n", r.change, r.made.Seconds(), r.done.Seconds(), (r.done - r.made).Seconds())
		}
		AddReportEntry("rollout latency", table.String())
		GinkgoWriter.Println(table.String())
		if out := os.Getenv("E2E_ROLLOUT_REPORT"); out != "" {
			Expect(os.WriteFile(out, []byte("# How soon status says a change of the servers is done\n\n`make bench-rollout`, "+time.Now().UTC().Format("2006-01-02")+
				", on the local cluster (a real kubelet; tests/e2e/latency_test.go): from the patch of the CR, when the cluster had made the change "+
				"on the last of 3 servers (its annotation, the kubelet's report of its new memory, its memcached restarted and ready), and when status "+
				"said it was done (status.rollout's change Complete, Progressing False, and Resizing or CacheWarm as the change has it), polled every "+
				"50 ms.\n\n"+table.String()), 0o644)).To(Succeed())
		}
	})
})
