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
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// A reconcile is caused by a change someone else made, never by the operator's own writes: one
// reconcile per install, then only the periodic ones, whatever the Go side, the finalizer, the
// release records and Kubernetes controllers write meanwhile. An extra reconcile would show as
// two reconciles less than a reconcile period apart.
var _ = Describe("Helm reconciles", Serial, func() {
	It("run once per install, again on a change by someone else, and not for the operator's own writes", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		key := types.NamespacedName{Namespace: ns, Name: "memcached-once"} // the chart names its objects after a release named so
		mark := writes.mark()
		createMemcached(ctx, key, "  replicaCount: 1")
		Eventually(deployedCondition(ctx, key), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
		Expect(writes.requestsSince(mark)).NotTo(ContainElement(ContainSubstring("/openapi/")),
			"an install fetches no OpenAPI document (Helm's client-side validation is off)")

		By("doing to the StatefulSet what kube-controller-manager does: its status")
		setRollout(ctx, key, 1, 1, 1)
		Eventually(memcachedStatus(ctx, key), timeout, interval).Should(HaveField("ReadyReplicas", BeEquivalentTo(1)),
			"the Go side reports the StatefulSet in the CR's status")

		By("seeing the next reconcile come a reconcile period after the one before")
		seen := len(helmReconciles.of(key))
		Eventually(func() int { return len(helmReconciles.of(key)) }, timeout, interval).Should(BeNumerically(">", seen))
		starts := helmReconciles.of(key)
		for i := 1; i < len(starts); i++ {
			Expect(starts[i].Sub(starts[i-1])).To(BeNumerically(">=", reconcilePeriod),
				"reconcile %d of %d came %s after the one before, sooner than the period: something the operator wrote triggered it (starts: %v)",
				i+1, len(starts), starts[i].Sub(starts[i-1]), starts)
		}

		By("scaling the StatefulSet by hand, which is reconciled at once, not at the next period")
		// The change is made just after a periodic reconcile starts, so the one it triggers has
		// nearly a whole period to start in, however slow the machine (race detector, CI load).
		before := len(helmReconciles.of(key))
		Eventually(func() int { return len(helmReconciles.of(key)) }, timeout, 5*time.Millisecond).Should(BeNumerically(">", before))
		last := len(helmReconciles.of(key))
		deploy := &appsv1.StatefulSet{}
		Expect(k8sClient.Get(ctx, key, deploy)).To(Succeed())
		deploy.Spec.Replicas = ptr.To[int32](4)
		Expect(k8sClient.Update(ctx, deploy)).To(Succeed())
		Eventually(func() int { return len(helmReconciles.of(key)) }, timeout, interval).Should(BeNumerically(">", last))
		starts = helmReconciles.of(key)
		if raceSlowdown == 1 {
			// Under the race detector beside the e2e cluster (make test-floor), the Get and
			// Update above alone took over the 2 s period once; make test checks the time.
			Expect(starts[last].Sub(starts[last-1])).To(BeNumerically("<", reconcilePeriod), "the change triggered a reconcile")
		}
		Eventually(func(g Gomega) *int32 {
			g.Expect(k8sClient.Get(ctx, key, deploy)).To(Succeed())
			return deploy.Spec.Replicas
		}, timeout, interval).Should(HaveValue(BeEquivalentTo(1)))
	})
})

// helmReconciles records when the Helm reconciler starts a reconcile of each CR, from its log
// ("Reconciliation triggered", logged with the CR's key at V(1)).
var helmReconciles = &reconcileLog{starts: map[string][]time.Time{}}

type reconcileLog struct {
	mu     sync.Mutex
	starts map[string][]time.Time
}

func (l *reconcileLog) of(key types.NamespacedName) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.starts[key.String()])
}

// sink wraps the suite's log sink.
func (l *reconcileLog) sink(delegate logr.LogSink) logr.LogSink {
	return reconcileLogSink{LogSink: delegate, log: l}
}

type reconcileLogSink struct {
	logr.LogSink
	log    *reconcileLog
	name   string
	values []any
}

func (s reconcileLogSink) Enabled(int) bool { return true } // V(1) is seen whatever the suite logs

func (s reconcileLogSink) Info(level int, msg string, kv ...any) {
	if msg == "Reconciliation triggered" && strings.HasSuffix(s.name, "controllers.Memcached") {
		for i := 0; i+1 < len(s.values); i += 2 {
			if s.values[i] == "memcached" {
				s.log.mu.Lock()
				key := fmt.Sprint(s.values[i+1])
				s.log.starts[key] = append(s.log.starts[key], time.Now())
				s.log.mu.Unlock()
			}
		}
	}
	if s.LogSink.Enabled(level) {
		s.LogSink.Info(level, msg, kv...)
	}
}

func (s reconcileLogSink) WithValues(kv ...any) logr.LogSink {
	s.values = append(slices.Clone(s.values), kv...)
	s.LogSink = s.LogSink.WithValues(kv...)
	return s
}

func (s reconcileLogSink) WithName(name string) logr.LogSink {
	s.LogSink = s.LogSink.WithName(name)
	if s.name != "" {
		name = s.name + "." + name
	}
	s.name = name
	return s
}
