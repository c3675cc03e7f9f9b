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
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/labels"
)

// The stats controller reads real memcached processes started on this machine's loopback: envtest
// runs no kubelet, so each spec makes the pod the StatefulSet would, with the process's address as
// its IP and port, and reads what the operator reports from it.
var _ = Describe("Memcached stats", func() {
	It("reports memcached's own figures, and MemoryPressure with Events while it evicts", func(ctx SpecContext) {
		host := startMemcached(2) // 2 MiB of item memory: a little load evicts
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "stats"}
		createMemcached(ctx, key, "  replicaCount: 1\n")
		DeferCleanup(func() { deleteMemcached(context.Background(), key) })
		memcachedPod(ctx, key, "stats-0", host, true)

		By("reporting the pod's figures in status, and no pressure once two reads tell")
		Eventually(memcachedStatus(ctx, key), timeout, interval).Should(HaveField("Stats", And(
			Not(BeNil()),
			HaveField("Pods", int32(1)),
			HaveField("MemoryLimit", WithTransform(func(q resource.Quantity) int64 { return q.Value() }, Equal(int64(2<<20)))),
			HaveField("MaxConnections", int32(1024)),
			HaveField("Connections", BeNumerically(">=", 1)),
			HaveField("LastStartTime.Time", BeTemporally("~", time.Now(), time.Minute)),
		)))
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionMemoryPressure), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "NoEvictions")))
		Expect(memcachedCondition(ctx, key, cachev1.ConditionConnectionsSaturated)(Default)).To(
			HaveField("Status", metav1.ConditionFalse))

		By("turning MemoryPressure True, with a Warning Event, while a load overfills the cache")
		stop := overfill(host)
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionMemoryPressure), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "Evicting"),
			HaveField("Message", ContainSubstring("raise memcached.maxMemoryMB"))))
		Expect(memcachedStatus(ctx, key)(Default).Stats.EvictionsPerSecond.MilliValue()).To(BeNumerically(">", 0))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement(cachev1.ConditionMemoryPressure))
		Expect(operandSeries(key)).To(And(
			HaveKeyWithValue("memcached_operator_operand_evictions_per_second", BeNumerically(">", 0)),
			HaveKeyWithValue("memcached_operator_operand_memory_limit_bytes", float64(2<<20))))

		By("turning it False again, with a Normal Event, when the load stops")
		stop()
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionMemoryPressure), timeout, interval).Should(
			HaveField("Status", metav1.ConditionFalse))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement(cachev1.ConditionMemoryPressure + "Relieved"))
		Eventually(func(g Gomega) int64 {
			return memcachedStatus(ctx, key)(g).Stats.EvictionsPerSecond.MilliValue()
		}, timeout, interval).Should(BeZero())

		By("writing nothing while the cache is quiet")
		// The writes of the last busy read may still land; from a second without any on, three
		// reads (one a second) write nothing.
		mark, at := writes.mark(), time.Now()
		Eventually(func() bool {
			if len(ofNamespace(writes.since(mark), key.Namespace)) > 0 {
				mark, at = writes.mark(), time.Now()
			}
			return time.Since(at) >= time.Second
		}, timeout, interval).Should(BeTrue(), "the writes of the busy reads end")
		Consistently(func() []string { return ofNamespace(writes.since(mark), key.Namespace) }, 3*time.Second, interval).Should(
			BeEmpty(), "reads of a quiet cache must not write")

		By("taking the figures back when the pod stops being ready")
		setPodReady(ctx, key.Namespace, "stats-0", false)
		Eventually(memcachedStatus(ctx, key), timeout, interval).Should(HaveField("Stats", BeNil()))
		Expect(memcachedCondition(ctx, key, cachev1.ConditionMemoryPressure)(Default)).To(And(
			HaveField("Status", metav1.ConditionUnknown), HaveField("Reason", "NoReadyPods")))
		Expect(operandSeries(key)).To(BeEmpty(), "the series of a Memcached without ready pods are removed")
	})

	It("reports ConnectionsSaturated while a pod is near its maxConnections", func(ctx SpecContext) {
		host := startMemcached(64) // maxConnections 1024
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "busy"}
		createMemcached(ctx, key, "  replicaCount: 1\n")
		DeferCleanup(func() { deleteMemcached(context.Background(), key) })
		memcachedPod(ctx, key, "busy-0", host, true)
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionConnectionsSaturated), timeout, interval).Should(
			HaveField("Status", metav1.ConditionFalse))

		conns := openConnections(host, 930) // with the operator's read: 931 of 1024, above 90%
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionConnectionsSaturated), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "NearMaxConnections")))
		Eventually(eventReasons(ctx, "Memcached", key), timeout, interval).Should(ContainElement(cachev1.ConditionConnectionsSaturated))
		for _, c := range conns {
			Expect(c.Close()).To(Succeed())
		}
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionConnectionsSaturated), timeout, interval).Should(
			HaveField("Status", metav1.ConditionFalse))
	})

	It("never reads a pod it did not make, and gives up on one that is not memcached", func(ctx SpecContext) {
		host := startMemcached(64)
		key := types.NamespacedName{Namespace: newNamespace(ctx), Name: "guarded"}
		createMemcached(ctx, key, "  replicaCount: 1\n")
		DeferCleanup(func() { deleteMemcached(context.Background(), key) })

		By("ignoring a ready pod a tenant labelled like the release's, without its StatefulSet")
		memcachedPod(ctx, key, "guarded-lookalike", host, false)
		Consistently(memcachedStatus(ctx, key), 3*time.Second, interval).Should(HaveField("Stats", BeNil()))

		By("ignoring a pod that names a StatefulSet of the release's name as its controller, but not the release's (another UID)")
		memcachedPod(ctx, key, "guarded-forged", host, false, func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "guarded-memcached",
				UID: types.UID("00000000-0000-0000-0000-000000000001"), Controller: ptr.To(true)}}
		})
		Consistently(memcachedStatus(ctx, key), 3*time.Second, interval).Should(HaveField("Stats", BeNil()))

		By("ignoring a pod on its node's network, whose IP is the node's")
		memcachedPod(ctx, key, "guarded-hostnetwork", host, true, func(p *corev1.Pod) { p.Spec.HostNetwork = true })
		Consistently(memcachedStatus(ctx, key), 3*time.Second, interval).Should(HaveField("Stats", BeNil()))

		By("reporting StatsUnreadable for a pod that answers garbage without end, and none of its bytes")
		garbage := endlessTalker()
		memcachedPod(ctx, key, "guarded-0", garbage, true)
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionMemoryPressure), timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionUnknown), HaveField("Reason", "StatsUnreadable"),
			HaveField("Message", And(ContainSubstring("not a memcached stats reply"), Not(ContainSubstring("HTTP"))))))
		Eventually(func() map[string]float64 { return operandSeries(key) }, timeout, interval).Should(
			HaveKeyWithValue("memcached_operator_operand_stats_read_errors_total", BeNumerically(">=", 1)))
	})
})

// loopbackHosts hands out addresses of the loopback network (127.0.0.0/8), one per memcached a
// spec starts: the operator reads every pod at the same port, statsPort, as at the chart's 11211.
var loopbackHosts atomic.Int32

// nextLoopbackHost is an address no other memcached of the run has: each of Ginkgo's parallel
// processes (make test runs the suite as several) takes its own 127.<process>.0.0/16.
func nextLoopbackHost() string {
	n := loopbackHosts.Add(1)
	return fmt.Sprintf("127.%d.%d.%d", GinkgoParallelProcess(), n/250, n%250+1)
}

// startMemcached runs memcached at statsPort of a loopback address of its own, with memoryMB of
// item memory and extra flags, until the spec ends, and returns that address.
func startMemcached(memoryMB int, flags ...string) string {
	bin, err := exec.LookPath("memcached")
	Expect(err).NotTo(HaveOccurred(), "the stats specs run a real memcached: apt-get install memcached (hack/packages.txt)")
	host := nextLoopbackHost()
	args := append([]string{"-l", host, "-p", strconv.Itoa(statsPort), "-U", "0", "-m", strconv.Itoa(memoryMB), "-u", "nobody"}, flags...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
	Expect(cmd.Start()).To(Succeed())
	DeferCleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	Eventually(func() error {
		c, err := net.Dial("tcp", statsAddr(host))
		if err == nil {
			_ = c.Close()
		}
		return err
	}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
	return host
}

func statsAddr(host string) string { return net.JoinHostPort(host, strconv.Itoa(statsPort)) }

// memcachedPod makes the pod the release's StatefulSet would (madeByServers: controlled by it), or
// one that only carries its labels, with the IP host, and marks it ready. Its spec names another
// port, as a tenant may write: the operator reads statsPort all the same.
func memcachedPod(ctx context.Context, key types.NamespacedName, name, host string, madeByServers bool, edits ...func(*corev1.Pod)) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: key.Namespace, Labels: map[string]string{
			labels.Name: labels.ChartName, labels.Instance: key.Name, labels.PartOf: labels.Operator}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "memcached", Image: relatedImage,
			Ports: []corev1.ContainerPort{{Name: "memcache", ContainerPort: 6443}}}}},
	}
	if madeByServers {
		var s *appsv1.StatefulSet
		Eventually(func() (err error) { s, err = serversOfRelease(ctx, key); return err }, timeout, interval).Should(Succeed())
		pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(s, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}
	}
	for _, edit := range edits {
		edit(pod)
	}
	Expect(k8sClient.Create(ctx, pod)).To(Succeed())
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: host, PodIPs: []corev1.PodIP{{IP: host}}}
	Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
	setPodReady(ctx, key.Namespace, name, true)
}

func setPodReady(ctx context.Context, ns, name string, ready bool) {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	Eventually(func(g Gomega) {
		pod := &corev1.Pod{}
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pod)).To(Succeed())
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
		g.Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
	}, timeout, interval).Should(Succeed())
}

// overfill stores 4 KB items under ever new keys until the returned stop is called.
func overfill(host string) (stop func()) {
	conn, err := net.Dial("tcp", statsAddr(host))
	Expect(err).NotTo(HaveOccurred())
	var stopped atomic.Bool
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		r := bufio.NewReader(conn)
		value := strings.Repeat("x", 4000)
		for i := 0; !stopped.Load(); i++ {
			if _, err := fmt.Fprintf(conn, "set load-%d 0 0 %d\r\n%s\r\n", i, len(value), value); err != nil {
				return
			}
			if line, err := r.ReadString('\n'); err != nil || line != "STORED\r\n" {
				return
			}
		}
	}()
	return func() {
		stopped.Store(true)
		<-done
		_ = conn.Close()
	}
}

// openConnections opens n idle client connections, which the caller closes.
func openConnections(host string, n int) []net.Conn {
	var conns []net.Conn
	for range n {
		c, err := net.Dial("tcp", statsAddr(host))
		Expect(err).NotTo(HaveOccurred())
		conns = append(conns, c)
	}
	DeferCleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return conns
}

// endlessTalker serves, until the spec ends, statsPort of a loopback address of its own, answering
// every connection with lines that are not memcached's, without end, and returns the address.
func endlessTalker() string {
	host := nextLoopbackHost()
	l, err := net.Listen("tcp", statsAddr(host))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(l.Close)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				for {
					if _, err := c.Write([]byte("HTTP/1.1 200 OK, or anything else\r\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	return host
}

// operandSeries are the values of the operand metrics of the Memcached key, by name.
func operandSeries(key types.NamespacedName) map[string]float64 {
	families, err := crmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	out := map[string]float64{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "memcached_operator_operand_") {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "memcached_namespace") == key.Namespace && label(m, "memcached") == key.Name {
				out[f.GetName()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
	}
	return out
}
