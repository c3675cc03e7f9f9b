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

// Package metrics has the operator's own metrics, served with controller-runtime's on the
// manager's metrics endpoint. docs/monitoring.md lists them; the alerts in config/prometheus use
// them.
package metrics

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/memcachedstatus"
	"github.com/example/memcached-operator/internal/helm/library"
)

// Operand are memcached's figures as the stats controller last read them, one series per
// Memcached (labels memcached_namespace and memcached: a scrape sets namespace to the operator's),
// removed when it is gone, has no ready pod, or none answered.
var Operand = newOperandGauges()

type operandGauges struct {
	pods, hitRatio, evictions, memUsed, memLimit, conns, maxConns *prometheus.GaugeVec
	readErrors                                                    *prometheus.CounterVec
}

func newOperandGauges() *operandGauges {
	by := []string{"memcached_namespace", "memcached"}
	gauge := func(name, help string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "memcached_operator", Subsystem: "operand", Name: name, Help: help}, by)
		crmetrics.Registry.MustRegister(g)
		return g
	}
	m := &operandGauges{
		pods:      gauge("pods_read", "Ready memcached pods whose stats were read."),
		hitRatio:  gauge("hit_ratio", "Share of gets that found their key, over the last read interval with gets (0 to 1)."),
		evictions: gauge("evictions_per_second", "Items evicted per second to store new ones, summed over the pods."),
		memUsed:   gauge("memory_used_bytes", "Item memory in use, summed over the pods."),
		memLimit:  gauge("memory_limit_bytes", "Item memory of the pods together (maxMemoryMB per pod)."),
		conns:     gauge("connections", "Open connections, summed over the pods."),
		maxConns:  gauge("max_connections", "Connections the pods accept together (maxConnections per pod)."),
		readErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "memcached_operator", Subsystem: "operand",
			Name: "stats_read_errors_total", Help: "Reads of a ready pod's stats that failed (timeout, refused, too many connections, not memcached)."}, by),
	}
	crmetrics.Registry.MustRegister(m.readErrors)
	return m
}

// Set publishes a Memcached's figures (nil: none this round, the last ones stay) and counts
// the reads of its pods that failed.
func (m *operandGauges) Set(key types.NamespacedName, s *cachev1.MemcachedStats, failedReads int) {
	l := labelsOf(key)
	if failedReads > 0 { // no series before the first failure, as a counter that was never incremented
		m.readErrors.With(l).Add(float64(failedReads))
	}
	if s == nil {
		m.forgetFigures(l)
		return
	}
	m.pods.With(l).Set(float64(s.Pods))
	if s.HitRatioPercent != nil {
		m.hitRatio.With(l).Set(float64(*s.HitRatioPercent) / 100)
	}
	if s.EvictionsPerSecond != nil {
		m.evictions.With(l).Set(s.EvictionsPerSecond.AsApproximateFloat64())
	}
	m.memUsed.With(l).Set(s.MemoryUsed.AsApproximateFloat64())
	m.memLimit.With(l).Set(s.MemoryLimit.AsApproximateFloat64())
	m.conns.With(l).Set(float64(s.Connections))
	m.maxConns.With(l).Set(float64(s.MaxConnections))
}

// Forget removes a Memcached's series.
func (m *operandGauges) Forget(key types.NamespacedName) {
	m.forgetFigures(labelsOf(key))
	m.readErrors.Delete(labelsOf(key))
}

// forgetFigures removes a Memcached's figures (not its count of failed reads).
func (m *operandGauges) forgetFigures(l prometheus.Labels) {
	for _, g := range []*prometheus.GaugeVec{m.pods, m.hitRatio, m.evictions, m.memUsed, m.memLimit, m.conns, m.maxConns} {
		g.Delete(l)
	}
}

func labelsOf(key types.NamespacedName) prometheus.Labels {
	return prometheus.Labels{"memcached_namespace": key.Namespace, "memcached": key.Name}
}

// Release states of memcached_operator_releases.
const (
	ReleaseDeployed       = "deployed"
	ReleaseFailed         = "failed"
	ReleaseIrreconcilable = "irreconcilable"
	ReleasePending        = "pending"
)

var releasesDesc = prometheus.NewDesc("memcached_operator_releases",
	"Memcached releases by state, from their conditions: failed (ReleaseFailed), irreconcilable (Irreconcilable), deployed (Deployed), else pending.",
	[]string{"state"}, nil)

var certificateExpiryDesc = prometheus.NewDesc("memcached_operator_tls_certificate_expiration_timestamp_seconds",
	"When the certificate a TLS Memcached's servers serve expires (the oldest any of them serves; status.tls.notAfter), in seconds since the epoch.",
	[]string{"memcached_namespace", "memcached"}, nil)

// ScrapeTime are the metrics read from the Memcacheds on each scrape (RegisterReleases): they have
// no series until a manager registered its reader and a Memcached exists.
func ScrapeTime() []*prometheus.Desc { return []*prometheus.Desc{releasesDesc, certificateExpiryDesc} }

// releaseStates counts the Memcacheds by the state of their release, and says when each TLS
// cache's certificate expires, from the cache of the CRs, on each scrape: figures kept up to date
// by the reconcilers would drift from the CRs they describe.
type releaseStates struct{ reader client.Reader }

func (releaseStates) Describe(ch chan<- *prometheus.Desc) {
	ch <- releasesDesc
	ch <- certificateExpiryDesc
}

func (c releaseStates) Collect(ch chan<- prometheus.Metric) {
	// The cache's List waits for its first sync: a scrape before then gets no count rather
	// than a hung request, and no invalid metric, which would fail the whole scrape.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &cachev1.MemcachedList{}
	if err := c.reader.List(ctx, list); err != nil {
		ctrl.Log.WithName("metrics").V(1).Info("releases not counted", "error", err.Error())
		return
	}
	counts := map[string]int{ReleaseDeployed: 0, ReleaseFailed: 0, ReleaseIrreconcilable: 0, ReleasePending: 0}
	for i := range list.Items {
		mc := &list.Items[i]
		counts[releaseState(mc.Status)]++
		if tls := mc.Status.TLS; tls != nil && tls.NotAfter != nil {
			ch <- prometheus.MustNewConstMetric(certificateExpiryDesc, prometheus.GaugeValue, float64(tls.NotAfter.Unix()), mc.Namespace, mc.Name)
		}
	}
	for state, n := range counts {
		ch <- prometheus.MustNewConstMetric(releasesDesc, prometheus.GaugeValue, float64(n), state)
	}
}

// releaseState is the state memcached_operator_releases counts a Memcached in.
func releaseState(st cachev1.MemcachedStatus) string {
	switch {
	case memcachedstatus.Condition(st, library.ConditionReleaseFailed).Status == metav1.ConditionTrue:
		return ReleaseFailed
	case memcachedstatus.Condition(st, library.ConditionIrreconcilable).Status == metav1.ConditionTrue:
		return ReleaseIrreconcilable
	case memcachedstatus.Condition(st, library.ConditionDeployed).Status == metav1.ConditionTrue:
		return ReleaseDeployed
	}
	return ReleasePending
}

// resizes counts the memory changes of Memcacheds by how they were made: in_place (no
// server restarted) or rollout (one server at a time; the ResizeByRollout Event says why).
var resizes = func() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "memcached_operator", Name: "memory_changes_total",
		Help: "Memory changes of Memcacheds' servers, by how they were made: in_place (no restart) or rollout."}, []string{"how"})
	crmetrics.Registry.MustRegister(c)
	c.WithLabelValues("in_place") // both series from the start, at 0, so that their rates are defined
	c.WithLabelValues("rollout")
	return c
}()

// changes counts the changes of Memcacheds' server templates by how they were made (the operand
// controller): in_place (no memcached restarted), warm_restart (restarted in their pods with their
// items) or started_empty (rolled out, each server starting empty).
var changes = func() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "memcached_operator", Name: "server_changes_total",
		Help: "Changes of Memcacheds' server templates, by how they were made: in_place, warm_restart or started_empty."}, []string{"way"})
	crmetrics.Registry.MustRegister(c)
	for _, way := range []string{cachev1.WayInPlace, cachev1.WayWarmRestart, cachev1.WayStartedEmpty} {
		c.WithLabelValues(wayLabel(way))
	}
	return c
}()

// wayLabel is a way's value of the way label.
func wayLabel(way string) string {
	switch way {
	case cachev1.WayWarmRestart:
		return "warm_restart"
	case cachev1.WayStartedEmpty:
		return "started_empty"
	}
	return "in_place"
}

// emptyLabel is the reason label of startedEmpty for a reason a server started empty
// (cachev1.Empty*).
func emptyLabel(reason string) string {
	switch reason {
	case cachev1.EmptyRolledOut:
		return "rollout"
	case cachev1.EmptyNotRestored:
		return "not_restored"
	case cachev1.EmptyPodReplaced:
		return "pod_replaced"
	}
	return "restarted"
}

// restored counts the memcached servers whose new pod restored the copy of their memory
// file from their volume (persistence); those that did not are counted as started empty
// (pod_replaced, or rollout).
var restored = func() prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "memcached_operator", Name: "servers_restored_total",
		Help: "memcached servers whose new pod restored the copy of their memory file from their volume (persistence)."})
	crmetrics.Registry.MustRegister(c)
	return c
}()

// startedEmpty counts the memcached servers that started empty, by reason.
var startedEmpty = func() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "memcached_operator", Name: "servers_started_empty_total",
		Help: "memcached servers that started empty, by reason: rollout, not_restored, pod_replaced or restarted."}, []string{"reason"})
	crmetrics.Registry.MustRegister(c)
	for _, reason := range []string{cachev1.EmptyRolledOut, cachev1.EmptyNotRestored, cachev1.EmptyPodReplaced, cachev1.EmptyRestarted} {
		c.WithLabelValues(emptyLabel(reason))
	}
	return c
}()

// Autopilot are the autopilot's choices per Memcached (removed when it is gone or the autopilot is
// off) and its steps.
var Autopilot = func() *autopilotGauges {
	by := []string{"memcached_namespace", "memcached"}
	m := &autopilotGauges{
		replicas: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "memcached_operator", Subsystem: "autopilot", Name: "replicas",
			Help: "Servers the autopilot chose."}, by),
		memory: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "memcached_operator", Subsystem: "autopilot", Name: "item_memory_bytes",
			Help: "Item memory per server the autopilot chose."}, by),
		steps: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "memcached_operator", Subsystem: "autopilot", Name: "steps_total",
			Help: "Steps the autopilot took: grow_memory, add_server, remove_server, shrink_memory."}, append(by, "step")),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "memcached_operator", Subsystem: "autopilot", Name: "steps_refused_total",
			Help: "Steps the autopilot did not take, by reason: quota (the namespace's ResourceQuota), bounds (at its bounds), memory_held (memcached holds the memory a shrink would take)."}, append(by, "reason")),
	}
	crmetrics.Registry.MustRegister(m.replicas, m.memory, m.steps, m.refused)
	return m
}()

type autopilotGauges struct {
	replicas, memory *prometheus.GaugeVec
	steps, refused   *prometheus.CounterVec
}

// Set publishes the autopilot's choice for a Memcached (nil: none, its series removed).
func (m *autopilotGauges) Set(key types.NamespacedName, a *cachev1.AutopilotStatus) {
	if a == nil {
		m.Forget(key)
		return
	}
	m.replicas.With(labelsOf(key)).Set(float64(a.Replicas))
	m.memory.With(labelsOf(key)).Set(float64(int64(a.MaxMemoryMB) << 20))
}

// Forget removes a Memcached's series.
func (m *autopilotGauges) Forget(key types.NamespacedName) {
	m.replicas.Delete(labelsOf(key))
	m.memory.Delete(labelsOf(key))
	m.steps.DeletePartialMatch(labelsOf(key))
	m.refused.DeletePartialMatch(labelsOf(key))
}

// Step counts a step the autopilot took for a Memcached (grow_memory, add_server, remove_server,
// shrink_memory).
func (m *autopilotGauges) Step(key types.NamespacedName, kind string) {
	m.steps.With(withLabel(labelsOf(key), "step", kind)).Inc()
}

// Refused counts a step the autopilot did not take for a Memcached, by reason (quota, bounds,
// memory_held).
func (m *autopilotGauges) Refused(key types.NamespacedName, reason string) {
	m.refused.With(withLabel(labelsOf(key), "reason", reason)).Inc()
}

// withLabel is l with one more label.
func withLabel(l prometheus.Labels, name, value string) prometheus.Labels {
	out := maps.Clone(l)
	out[name] = value
	return out
}

// CountResize counts a memory change of a Memcached's servers made in_place or by rollout.
func CountResize(how string) { resizes.WithLabelValues(how).Inc() }

// CountChange counts a change of a Memcached's server template made the way way (cachev1.Way*).
func CountChange(way string) { changes.WithLabelValues(wayLabel(way)).Inc() }

// CountRestored counts a server whose new pod restored its memory file from its volume.
func CountRestored() { restored.Inc() }

// CountStartedEmpty counts a server that started empty, for reason (cachev1.Empty*).
func CountStartedEmpty(reason string) { startedEmpty.WithLabelValues(emptyLabel(reason)).Inc() }

// releaseCollector is the releases metric's collector of the last RegisterReleases: a manager set
// up again in the same process (the tests restart the operator) counts from its own cache.
var releaseCollector struct {
	sync.Mutex
	current prometheus.Collector
}

// RegisterReleases makes the releases and certificate expiry metrics read the Memcacheds through
// reader on each scrape, in place of any reader registered before.
func RegisterReleases(reader client.Reader) error {
	c := releaseStates{reader: reader}
	releaseCollector.Lock()
	defer releaseCollector.Unlock()
	if releaseCollector.current != nil {
		crmetrics.Registry.Unregister(releaseCollector.current)
	}
	if err := crmetrics.Registry.Register(c); err != nil {
		return err
	}
	releaseCollector.current = c
	return nil
}
