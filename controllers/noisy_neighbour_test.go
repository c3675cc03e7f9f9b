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
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// A tenant who may edit CRs in its namespace runs any image as "memcached": its servers may accept
// a connection and never answer, answer a byte a second, or answer garbage at full speed. The
// operator talks to every server of every cache, and its workers are every tenant's. Tenant A's
// caches of such servers, in three namespaces (more than any pool has workers), their memory
// changed every few seconds (each shrink asks every server what it holds), must not slow tenant
// B's install, availability or in-place memory change, and each of A's caches says why it is read
// less. What bounds B's wait is that no worker of any controller waits on a server: every
// conversation runs beside the workers, a namespace's one at a time (conversations), so B waits
// for no conversation of A's, however many namespaces A stalls.
//
// B is measured twice beside A's same caches and the same changes: first while nothing listens at
// A's servers' addresses (every conversation refused at once), then while A's servers stall. The
// operator's work for A is the same in both, so is the load it puts on the 2 cores; what differs
// is only whether A's servers keep the operator waiting. Serial: no other spec's process shares
// the cores while it measures.
var _ = Describe("One tenant's stalling servers", Ordered, Serial, func() {
	ctx := context.Background()

	It("slow no other tenant's install, availability or memory change, and are reported", func() {
		// An operator of the two tenants' namespaces alone: the CRs other specs left, each
		// reconciled every few seconds, would weigh on both measurements unevenly.
		nsA := []string{newNamespace(ctx), newNamespace(ctx), newNamespace(ctx)}
		nsB := make([]string, 10)
		for i := range nsB {
			nsB[i] = newNamespace(ctx)
		}
		restartOperatorWatching(append(slices.Clone(nsA), nsB...)...)
		DeferCleanup(restartOperator)

		By("tenant A: 10 caches of 3 servers in 3 namespaces, at addresses where nothing listens yet")
		var caches []*stallingServers
		for i := range 10 {
			key := types.NamespacedName{Namespace: nsA[i%len(nsA)], Name: fmt.Sprintf("a%d", i)}
			s := &stallingServers{key: key, hosts: []string{nextLoopbackHost(), nextLoopbackHost(), nextLoopbackHost()}}
			createMemcached(ctx, key, "  replicaCount: 3\n  minReadySeconds: 0\n")
			s.servers = playServers(ctx, key, s.hosts, "rev-64")
			caches = append(caches, s)
		}
		helmSlow := slowReconciles("memcached-controller", 1500*time.Millisecond)
		helmTalks := watchTalkingToServers()
		churn := churnMemory(ctx, caches)
		time.Sleep(7 * time.Second) // into A's first shrinks
		refusing := measureTenant(ctx, "beside A's servers refusing", nsB[:5])

		By("A's servers now accept, and stall, answer a byte a second, or answer garbage")
		for _, c := range caches {
			for i, kind := range []stallingKind{silent, trickle, garbage} {
				stallingServer(c.hosts[i], kind)
			}
		}
		time.Sleep(7 * time.Second) // into the shrinks that ask them
		stalling := measureTenant(ctx, "beside A's servers stalling", nsB[5:])
		churn()
		talked, workers, samples := helmTalks()
		helmSlow = slowReconciles("memcached-controller", 1500*time.Millisecond) - helmSlow

		report := fmt.Sprintf("noisy neighbour (median of %d):\n| tenant B, beside A's 10 caches of 3 servers | servers refusing at once | servers stalling |\n|---|---|---|\n", len(refusing.deployed))
		for _, m := range []struct {
			what              string
			refusing, stalled []time.Duration
		}{{"created → Deployed", refusing.deployed, stalling.deployed}, {"servers ready → Available", refusing.available, stalling.available},
			{"memory 64 → 96 MiB → made in place", refusing.resized, stalling.resized}} {
			if len(m.refusing) == 0 {
				continue
			}
			report += fmt.Sprintf("| %s | %s | %s |\n", m.what, median(m.refusing), median(m.stalled))
		}
		report += fmt.Sprintf("\nHelm reconciles over 1.5 s while A's memory changed: %d (busy cores or a slow disk make some; a Helm worker "+
			"that waited on A's servers would make one per shrink)\n", helmSlow)
		AddReportEntry("noisy neighbour", report)
		GinkgoWriter.Println(report)
		if out := os.Getenv("NOISY_NEIGHBOUR_REPORT"); out != "" { // make bench-noisy
			Expect(os.WriteFile(out, []byte("# Noisy neighbour\n\n`make bench-noisy`, "+time.Now().UTC().Format("2006-01-02")+
				": the envtest spec \"One tenant's stalling servers\" (controllers/noisy_neighbour_test.go): tenant B's latencies beside "+
				"tenant A's 10 caches of 3 servers, A's memory changed every 6 s, first while A's servers refuse every connection at once, "+
				"then while they stall, trickle or answer garbage.\n\n"+report), 0o644)).To(Succeed())
		}
		within := func(what string, refusing, stalled []time.Duration) {
			GinkgoHelper()
			if len(refusing) == 0 || raceSlowdown > 1 || os.Getenv("NOISY_NEIGHBOUR_REPORT") == "" {
				// The times are a benchmark's figures (make bench-noisy checks them, alone on the
				// machine): in make test the suite's other packages share the 2 cores, whose load
				// moves B's figures by seconds (CI, 2026-12-04: 4.9 s against a limit of 4.8 s,
				// the machine compiling beside); under the race detector the two measurements are
				// minutes apart. What catches a worker held by A's servers in every run is the
				// sampling of the workers' stacks above.
				return
			}
			// 1.5x, and a second: B's figures are in the hundreds of milliseconds, where a busy
			// core alone doubles them.
			Expect(median(stalled)).To(BeNumerically("<=", median(refusing)*3/2+time.Second),
				"%s: %s beside A's stalling servers, %s beside A's refusing ones", what, median(stalled), median(refusing))
		}
		// Checked by what the workers do, not by how long they take (busy cores make Helm
		// reconciles slow too): before the fix a shrink asked A's servers on a Helm worker.
		Expect(samples).To(BeNumerically(">", 50), "the Helm workers' stacks were sampled while A's memory changed")
		Expect(talked).To(BeEmpty(), "no Helm reconcile talks to a server: the Helm workers are every tenant's; these did:\n%s", strings.Join(talked, "\n\n"))
		Expect(workers).To(BeEmpty(), "no worker of any controller waits on a server: these did:\n%s", strings.Join(workers, "\n\n"))
		within("Deployed", refusing.deployed, stalling.deployed)
		within("Available", refusing.available, stalling.available)
		within("an in-place memory change", refusing.resized, stalling.resized)

		By("each of A's caches says its servers do not answer")
		for _, s := range caches {
			Eventually(memcachedCondition(ctx, s.key, cachev1.ConditionServersResponsive), timeout, interval).Should(And(
				HaveField("Status", metav1.ConditionFalse), HaveField("Reason", cachev1.ReasonServersUnresponsive),
				HaveField("Message", ContainSubstring("3 of 3 ready servers did not answer as memcached"))))
		}
		Eventually(eventReasons(ctx, "Memcached", caches[0].key), timeout, interval).Should(ContainElement(cachev1.ReasonServersUnresponsive))
	})
})

// tenantTimes are a tenant's measured latencies, one per repetition.
type tenantTimes struct {
	deployed, available, resized []time.Duration
}

// measureTenant measures, once in each of namespaces, a new cache of one real server:
// from its creation to Deployed, from its server being ready to Available, and (where the API
// server resizes pods) from a memory change to its being made in place.
func measureTenant(ctx context.Context, what string, namespaces []string) tenantTimes {
	GinkgoHelper()
	var t tenantTimes
	for rep, ns := range namespaces {
		By(fmt.Sprintf("tenant B %s, %d of %d", what, rep+1, len(namespaces)))
		key := types.NamespacedName{Namespace: ns, Name: "b"}
		host := startMemcached(64)
		start := time.Now()
		createMemcached(ctx, key, "  replicaCount: 1\n  minReadySeconds: 0\n")
		Eventually(memcachedCondition(ctx, key, "Deployed"), timeout, 10*time.Millisecond).Should(HaveField("Status", metav1.ConditionTrue))
		t.deployed = append(t.deployed, time.Since(start))

		servers := playServers(ctx, key, []string{host}, "rev-64")
		start = time.Now()
		Eventually(memcachedCondition(ctx, key, cachev1.ConditionAvailable), timeout, 10*time.Millisecond).Should(HaveField("Status", metav1.ConditionTrue))
		t.available = append(t.available, time.Since(start))

		if !servesResize(cfg) {
			continue // this API server does not serve pods/resize (Kubernetes before 1.33): no change in place to measure
		}
		start = time.Now()
		updateSpec(ctx, key, "  replicaCount: 1\n  minReadySeconds: 0\n  memcached: {maxMemoryMB: 96}\n")
		awaitHold(ctx, servers, 96, 1)
		setServerRevisions(ctx, servers, "rev-64", "rev-96", 0)
		Eventually(podMemoryLimit(ctx, servers, 0), timeout, 10*time.Millisecond).Should(Equal("128Mi"))
		kubeletResized(ctx, servers, 0)
		Eventually(func(g Gomega) *cachev1.ServersChange { return changeOf(g, ctx, servers) }, timeout, 10*time.Millisecond).Should(
			HaveField("Phase", cachev1.RolloutComplete))
		t.resized = append(t.resized, time.Since(start))
		deleteMemcached(ctx, key) // no periodic reconciles of it during the next measurement
	}
	return t
}

// watchTalkingToServers samples every goroutine's stack every 100 ms until stopped, and returns
// then the stacks of goroutines that talked to a memcached server (inside internal/memcache's
// conversations, which wait up to 2 s on a stalling server) for a reconcile of the Helm
// reconciler: in it, or started by it (servertalk.Ask asks each server on a goroutine of its own);
// the stacks of any controller's workers that waited on a conversation with servers; and how many
// samples it took.
func watchTalkingToServers() (stop func() (talked, workers []string, samples int)) {
	const (
		helmReconcile = "helm-operator-plugins/pkg/reconciler.(*Reconciler).Reconcile"
		// worker is in the stack of every controller's worker while it reconciles.
		worker       = "sigs.k8s.io/controller-runtime/pkg/internal/controller.(*Controller[...]).reconcileHandler"
		conversation = "memcached-operator/internal/memcache."
	)
	done := make(chan struct{})
	var wg sync.WaitGroup
	var talked, workers []string
	samples := 0
	wg.Go(func() {
		buf := make([]byte, 1<<20)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			n := runtime.Stack(buf, true)
			for n == len(buf) {
				buf = make([]byte, 2*len(buf))
				n = runtime.Stack(buf, true)
			}
			samples++
			for _, g := range helmConversations(string(buf[:n]), helmReconcile, conversation) {
				if len(talked) < 3 {
					talked = append(talked, g)
				}
			}
			for stack := range strings.SplitSeq(string(buf[:n]), "\n\n") {
				if strings.Contains(stack, worker) && (strings.Contains(stack, conversation) || strings.Contains(stack, "servertalk.Ask[")) && len(workers) < 3 {
					workers = append(workers, stack)
				}
			}
		}
	})
	return func() ([]string, []string, int) { close(done); wg.Wait(); return talked, workers, samples }
}

// helmConversations returns the stacks in dump (runtime.Stack of all goroutines) that contain
// conversation and either contain reconcile or were started, directly or not, by a goroutine
// whose stack does.
func helmConversations(dump, reconcile, conversation string) []string {
	type goroutine struct {
		stack  string
		parent string
	}
	all := map[string]goroutine{}
	for stack := range strings.SplitSeq(dump, "\n\n") {
		id, _, _ := strings.Cut(strings.TrimPrefix(stack, "goroutine "), " ")
		g := goroutine{stack: stack}
		if _, creator, ok := strings.Cut(stack, "\ncreated by "); ok {
			if _, parent, ok := strings.Cut(creator, " in goroutine "); ok {
				g.parent, _, _ = strings.Cut(parent, "\n")
			}
		}
		all[id] = g
	}
	var found []string
	for _, g := range all {
		if !strings.Contains(g.stack, conversation) {
			continue
		}
		for a, depth := g, 0; depth < 10; depth++ {
			if strings.Contains(a.stack, reconcile) {
				found = append(found, g.stack)
				break
			}
			var ok bool
			if a, ok = all[a.parent]; !ok {
				break
			}
		}
	}
	return found
}

// slowReconciles counts the reconciles of a controller that took longer than limit, from
// controller-runtime's histogram (limit must be one of its buckets).
func slowReconciles(controller string, limit time.Duration) uint64 {
	GinkgoHelper()
	families, err := crmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	var slow uint64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_time_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "controller") != controller {
				continue
			}
			h := m.GetHistogram()
			within := uint64(0)
			found := false
			for _, b := range h.GetBucket() {
				if b.GetUpperBound() == limit.Seconds() {
					within, found = b.GetCumulativeCount(), true
				}
			}
			Expect(found).To(BeTrue(), "%s is a bucket of controller_runtime_reconcile_time_seconds", limit)
			slow += h.GetSampleCount() - within
		}
	}
	return slow
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2].Round(time.Millisecond)
}

// stallingServers are a cache of tenant A and its servers' addresses.
type stallingServers struct {
	key     types.NamespacedName
	hosts   []string
	servers *appsv1.StatefulSet
}

// churnMemory changes each of A's caches every 6 s, one cache after the other (600 ms apart),
// until stopped, and plays their StatefulSet controller as if each change rolled out at once: every
// other change of a cache is a shrink of memory alone, for which its servers are asked what they
// hold; the changes between (memory back up, with another maxConnections) are rolled out, so that
// each shrink is judged afresh.
func churnMemory(ctx context.Context, caches []*stallingServers) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer GinkgoRecover()
		tick := time.NewTicker(6 * time.Second / time.Duration(len(caches)))
		defer tick.Stop()
		for n := 0; ; n++ {
			c, round := caches[n%len(caches)], n/len(caches)
			if round > 0 {
				if s, err := serversOfRelease(ctx, c.key); err == nil {
					rev := fmt.Sprintf("rev-%d", round)
					setServerRevisions(ctx, s, rev, rev, 3) // the last change rolled out
				}
			}
			mb, conns := 64, 1000+round
			if round%2 == 1 {
				mb, conns = 32, 1000+round-1 // memory alone
			}
			updateSpec(ctx, c.key, fmt.Sprintf("  replicaCount: 3\n  minReadySeconds: 0\n  memcached: {maxMemoryMB: %d, maxConnections: %d}\n", mb, conns))
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	stop = sync.OnceFunc(func() { close(done); wg.Wait() })
	// Also when the spec fails before it stops the churn: no write after the API server is gone.
	DeferCleanup(stop)
	return stop
}

// stallingKind is how a stalling server answers.
type stallingKind int

const (
	silent  stallingKind = iota // accepts, reads, never answers
	trickle                     // answers a memcached-like reply a byte a second
	garbage                     // answers random bytes as fast as it can
)

// stallingServer listens at statsPort of host until the spec ends, and answers every connection
// as kind says.
func stallingServer(host string, kind stallingKind) {
	GinkgoHelper()
	l, err := net.Listen("tcp", statsAddr(host))
	Expect(err).NotTo(HaveOccurred())
	var conns sync.WaitGroup
	quit := make(chan struct{})
	DeferCleanup(func() { _ = l.Close(); close(quit); conns.Wait() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Go(func() {
				defer c.Close()
				go func() { _, _ = c.Read(make([]byte, 1<<16)) }()
				switch kind {
				case silent:
					<-quit
				case trickle:
					for _, b := range []byte("STAT pid 1\r\nSTAT uptime 10\r\n") {
						if _, err := c.Write([]byte{b}); err != nil {
							return
						}
						select {
						case <-quit:
							return
						case <-time.After(time.Second):
						}
					}
				case garbage:
					buf := make([]byte, 4096)
					for {
						_, _ = rand.Read(buf)
						if _, err := c.Write(buf); err != nil {
							return
						}
					}
				}
			})
		}
	}()
}
