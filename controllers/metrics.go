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

package controllers

import (
	"context"
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

// The operator's own metrics, served with controller-runtime's on the manager's metrics endpoint.
// docs/monitoring.md lists them; the alerts in config/prometheus use them.

// operandMetrics are memcached's figures as the stats controller last read them, one series per
// Memcached (labels memcached_namespace and memcached: a scrape sets namespace to the operator's),
// removed when it is gone, has no ready pod, or none answered.
var operandMetrics = newOperandGauges()

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

// set publishes a Memcached's figures (nil: none this round, the last ones stay) and counts
// the reads that failed.
func (m *operandGauges) set(key types.NamespacedName, s *cachev1.MemcachedStats, reads []podRead) {
	l := labelsOf(key)
	for _, rd := range reads {
		if rd.err != nil {
			m.readErrors.With(l).Inc()
		}
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

// forget removes a Memcached's series.
func (m *operandGauges) forget(key types.NamespacedName) {
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

// resizeMetrics counts the memory changes of Memcacheds by how they were made: in_place (no
// server restarted) or rollout (one server at a time; the ResizeByRollout Event says why).
var resizeMetrics = func() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "memcached_operator", Name: "memory_changes_total",
		Help: "Memory changes of Memcacheds' servers, by how they were made: in_place (no restart) or rollout."}, []string{"how"})
	crmetrics.Registry.MustRegister(c)
	c.WithLabelValues("in_place") // both series from the start, at 0, so that their rates are defined
	c.WithLabelValues("rollout")
	return c
}()

// autopilotMetrics are the autopilot's choices per Memcached (removed when it is gone or the
// autopilot is off) and its steps.
// changeMetrics counts the changes of Memcacheds' server templates by how they were made
// (servers_change.go): in_place (no memcached restarted), warm_restart (restarted in their pods
// with their items) or started_empty (rolled out, each server starting empty).
var changeMetrics = func() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "memcached_operator", Name: "server_changes_total",
		Help: "Changes of Memcacheds' server templates, by how they were made: in_place, warm_restart or started_empty."}, []string{"way"})
	crmetrics.Registry.MustRegister(c)
	for _, way := range []string{cachev1.WayInPlace, cachev1.WayWarmRestart, cachev1.WayStartedEmpty} {
		c.WithLabelValues(wayMetric(way))
	}
	return c
}()

// wayMetric is a way's value of the way label.
func wayMetric(way string) string {
	switch way {
	case cachev1.WayWarmRestart:
		return "warm_restart"
	case cachev1.WayStartedEmpty:
		return "started_empty"
	}
	return "in_place"
}

// emptyMetric is the reason label of startedEmptyMetrics for a reason a server started empty
// (cachev1.Empty*).
func emptyMetric(reason string) string {
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

// restoredMetrics counts the memcached servers whose new pod restored the copy of their memory
// file from their volume (persistence); those that did not are counted as started empty
// (pod_replaced, or rollout).
var restoredMetrics = func() prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "memcached_operator", Name: "servers_restored_total",
		Help: "memcached servers whose new pod restored the copy of their memory file from their volume (persistence)."})
	crmetrics.Registry.MustRegister(c)
	return c
}()

// startedEmptyMetrics counts the memcached servers that started empty, by reason.
var startedEmptyMetrics = func() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "memcached_operator", Name: "servers_started_empty_total",
		Help: "memcached servers that started empty, by reason: rollout, not_restored, pod_replaced or restarted."}, []string{"reason"})
	crmetrics.Registry.MustRegister(c)
	for _, reason := range []string{cachev1.EmptyRolledOut, cachev1.EmptyNotRestored, cachev1.EmptyPodReplaced, cachev1.EmptyRestarted} {
		c.WithLabelValues(emptyMetric(reason))
	}
	return c
}()

var autopilotMetrics = func() *autopilotGauges {
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

func (m *autopilotGauges) set(key types.NamespacedName, a *cachev1.AutopilotStatus) {
	if a == nil {
		m.forget(key)
		return
	}
	m.replicas.With(labelsOf(key)).Set(float64(a.Replicas))
	m.memory.With(labelsOf(key)).Set(float64(int64(a.MaxMemoryMB) << 20))
}

func (m *autopilotGauges) forget(key types.NamespacedName) {
	m.replicas.Delete(labelsOf(key))
	m.memory.Delete(labelsOf(key))
	m.steps.DeletePartialMatch(labelsOf(key))
	m.refused.DeletePartialMatch(labelsOf(key))
}
