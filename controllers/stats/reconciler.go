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

// Package stats is the controller that reads memcached's own stats from each Memcached's ready
// servers into status.stats, its conditions, Events and the operand metrics.
package stats

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/autopilotsize"
	"github.com/example/memcached-operator/controllers/internal/managercache"
	"github.com/example/memcached-operator/controllers/internal/memcachedstatus"
	"github.com/example/memcached-operator/controllers/internal/metrics"
	"github.com/example/memcached-operator/controllers/internal/serverset"
	"github.com/example/memcached-operator/controllers/internal/servertalk"
	"github.com/example/memcached-operator/controllers/internal/texts"
	"github.com/example/memcached-operator/internal/memcache"
)

const (
	// DefaultInterval is how often the stats of a Memcached's ready pods are read.
	DefaultInterval = 30 * time.Second
	// saturatedPercent of maxConnections open on a pod counts as saturated.
	saturatedPercent = 90
)

// Reconciler reads memcached's own `stats` from the ready pods of each Memcached,
// every Interval while it has ready pods, and reports them in status.stats, the conditions
// MemoryPressure and ConnectionsSaturated (with an Event when either changes) and the operand
// metrics. It is its own controller, with its own queue: a slow or unreachable pod never
// delays a reconcile of the release or of its pods.
type Reconciler struct {
	client.Client
	Recorder events.EventRecorder
	// Interval between reads of one Memcached's pods.
	Interval time.Duration
	// Workers read that many Memcacheds at once.
	Workers int
	// Reach is how the operator reaches the servers: memcached's port in each pod (the chart's),
	// not the port the pod spec names, since a pod's spec is the tenant's to write, and TLS.
	Reach *servertalk.Reach

	mu sync.Mutex
	// last is each pod's previous read, by Memcached: rates are the difference of two reads.
	last map[types.NamespacedName]map[types.UID]memcache.Stats
	// unresponsive counts, per Memcached, the rounds in a row some of its servers did not answer.
	unresponsive map[types.NamespacedName]int
	// said is, per Memcached, each condition the Events speak of as this controller last wrote
	// it. Its Events say a change against that, not against a read from a cache that may not
	// show the write yet: that would say a change twice, or miss one.
	said map[types.NamespacedName][]cachev1.HelmCondition
	// talk has the conversations with the servers held off the workers: a cache whose servers
	// answer slowly or never keeps no worker waiting.
	talk *servertalk.Conversations
}

// podRead is one pod's answer.
type podRead struct {
	pod   *corev1.Pod
	stats memcache.Stats
	err   error
}

// Reconcile reads the stats of a Memcached's ready pods and writes what changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	mc := &cachev1.Memcached{}
	if err := r.Get(ctx, req.NamespacedName, mc); err != nil {
		if apierrors.IsNotFound(err) {
			r.gone(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if mc.DeletionTimestamp != nil {
		r.gone(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	pods, err := serverset.Ready(ctx, r.Client, mc)
	if err != nil {
		return ctrl.Result{}, err
	}
	st := mc.Status.DeepCopy()
	var reads []podRead
	if len(pods) == 0 {
		r.forget(req.NamespacedName)
		if st.Stats == nil && memcachedstatus.Condition(*st, cachev1.ConditionMemoryPressure).Type == "" {
			return ctrl.Result{}, nil // never read: nothing to take back (a new CR writes nothing here)
		}
		st.Stats = nil
		msg := "no memcached pod is ready to be read"
		memcachedstatus.SetCondition(st, cachev1.ConditionMemoryPressure, metav1.ConditionUnknown, "NoReadyPods", msg)
		memcachedstatus.SetCondition(st, cachev1.ConditionConnectionsSaturated, metav1.ConditionUnknown, "NoReadyPods", msg)
	} else {
		// Asked beside the workers; the answer brings this cache back (or the next look, when
		// another of the namespace's caches is asked now).
		answer, _, ok := r.talk.Ask(req.NamespacedName, "stats of "+servertalk.PodUIDs(pods), func(ctx context.Context) (any, error) {
			return readStats(ctx, pods, r.Reach), nil
		})
		if !ok {
			return ctrl.Result{RequeueAfter: servertalk.TenantRetry}, nil
		}
		reads = answer.([]podRead)
		r.observe(req.NamespacedName, st, reads, autopilotsize.On(&mc.Spec))
		observeResponsive(st, reads)
	}
	for _, rd := range reads {
		if rd.err != nil {
			log.FromContext(ctx).V(1).Info("memcached stats unreadable", "error", rd.err.Error())
		}
	}
	if !equality.Semantic.DeepEqual(*st, mc.Status) {
		notes := r.notes(mc, r.saidBefore(req.NamespacedName, mc.Status), *st)
		written, err := memcachedstatus.StatsWriter.WriteOn(ctx, r.Client, mc, st, "")
		if written != "" { // what st says is live (err: only the trim after it failed)
			mc.Status = *st
			r.sayOf(req.NamespacedName, *st)
			for _, note := range notes {
				note()
			}
		}
		if err != nil {
			return memcachedstatus.AfterWriteError(err)
		}
	}
	r.remember(req.NamespacedName, reads)
	failed := 0
	for _, rd := range reads {
		if rd.err != nil {
			failed++
		}
	}
	metrics.Operand.Set(req.NamespacedName, st.Stats, failed)
	if len(pods) == 0 {
		return ctrl.Result{}, nil // the pods' watch brings us back when one is ready
	}
	return ctrl.Result{RequeueAfter: r.next(req.NamespacedName, st)}, nil
}

// next is when to read a Memcached again: after Interval, or, while servers of it do not answer,
// after twice as long for each round in a row they did not, up to maxUnresponsiveBackoff.
func (r *Reconciler) next(key types.NamespacedName, st *cachev1.MemcachedStatus) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if memcachedstatus.Condition(*st, cachev1.ConditionServersResponsive).Status != metav1.ConditionFalse {
		delete(r.unresponsive, key)
		return r.Interval
	}
	if r.unresponsive == nil {
		r.unresponsive = map[types.NamespacedName]int{}
	}
	rounds := r.unresponsive[key]
	r.unresponsive[key] = rounds + 1
	return min(r.Interval<<min(rounds+1, 10), max(maxUnresponsiveBackoff, r.Interval))
}

// maxUnresponsiveBackoff is the longest a Memcached whose servers do not answer waits to be read
// again (a server's readiness changing reads it at once).
const maxUnresponsiveBackoff = 10 * time.Minute

// observeResponsive sets ServersResponsive from a round of reads.
func observeResponsive(st *cachev1.MemcachedStatus, reads []podRead) {
	var silent []string
	var first error
	for _, rd := range reads {
		if rd.err != nil && !errors.Is(rd.err, memcache.ErrTooManyConnections) {
			silent = append(silent, rd.pod.Name)
			if first == nil {
				first = rd.err
			}
		}
	}
	if len(silent) == 0 {
		if memcachedstatus.Condition(*st, cachev1.ConditionServersResponsive).Type != "" {
			memcachedstatus.SetCondition(st, cachev1.ConditionServersResponsive, metav1.ConditionTrue, "ServersAnswer",
				fmt.Sprintf("every ready server answered within %s", servertalk.CacheTimeout))
		}
		return
	}
	memcachedstatus.SetCondition(st, cachev1.ConditionServersResponsive, metav1.ConditionFalse, cachev1.ReasonServersUnresponsive,
		fmt.Sprintf("%s did not answer as memcached within %s (%s; %v): the operator reads this cache less often while they do not",
			texts.CountOf(len(silent), len(reads), "ready server", "ready servers"), servertalk.CacheTimeout, strings.Join(silent, ", "), first))
}

// readStats reads every pod's stats, all at once within one deadline for the cache.
func readStats(ctx context.Context, pods []*corev1.Pod, reach *servertalk.Reach) []podRead {
	answers := servertalk.Ask(ctx, pods, reach, func(ctx context.Context, srv memcache.Server) (memcache.Stats, error) {
		return memcache.ReadStats(ctx, srv, servertalk.CacheTimeout)
	})
	reads := make([]podRead, len(answers))
	for i, a := range answers {
		reads[i] = podRead{pod: a.Pod, stats: a.Value, err: a.Err}
		if a.Err != nil {
			reads[i].err = fmt.Errorf("read stats of pod %w", a.Err)
		}
	}
	return reads
}

// observe turns the reads into status.stats and the two conditions, with each pod's previous
// read for the rates.
func (r *Reconciler) observe(key types.NamespacedName, st *cachev1.MemcachedStatus, reads []podRead, autopilot bool) {
	r.mu.Lock()
	prev := r.last[key]
	r.mu.Unlock()
	sum := summarize(reads, prev, st.Stats)
	if sum.stats == nil {
		st.Stats = nil // figures nobody could read are not current
		msg := fmt.Sprintf("no pod answered: %v", sum.firstErr)
		memcachedstatus.SetCondition(st, cachev1.ConditionMemoryPressure, metav1.ConditionUnknown, "StatsUnreadable", msg)
		if sum.saturatedPods == 0 {
			memcachedstatus.SetCondition(st, cachev1.ConditionConnectionsSaturated, metav1.ConditionUnknown, "StatsUnreadable", msg)
		} else {
			memcachedstatus.SetCondition(st, cachev1.ConditionConnectionsSaturated, metav1.ConditionTrue, "NearMaxConnections",
				fmt.Sprintf("%s refused connections at their maxConnections: raise memcached.maxConnections or replicaCount", texts.CountOf(sum.saturatedPods, len(reads), "pod", "pods")))
		}
		return
	}
	st.Stats = sum.stats
	switch {
	case sum.evictingPods > 0:
		todo := "raise memcached.maxMemoryMB or replicaCount"
		if autopilot {
			todo = "the autopilot grows it within spec.autoscaling (see ScalingActive)"
		}
		memcachedstatus.SetCondition(st, cachev1.ConditionMemoryPressure, metav1.ConditionTrue, "Evicting",
			fmt.Sprintf("%s items/s evicted on %s: the cache is smaller than what its clients store; %s",
				texts.PerSecond(sum.stats.EvictionsPerSecond.AsApproximateFloat64()), texts.CountOf(sum.evictingPods, int(sum.stats.Pods), "pod", "pods"), todo))
	case sum.measured:
		memcachedstatus.SetCondition(st, cachev1.ConditionMemoryPressure, metav1.ConditionFalse, "NoEvictions",
			fmt.Sprintf("no evictions; the fullest pod uses %d%% of its item memory", sum.stats.MemoryUsedPercent))
	case memcachedstatus.Condition(*st, cachev1.ConditionMemoryPressure).Status != metav1.ConditionTrue &&
		memcachedstatus.Condition(*st, cachev1.ConditionMemoryPressure).Status != metav1.ConditionFalse:
		// Evictions are a difference of two reads: the first read cannot tell.
		memcachedstatus.SetCondition(st, cachev1.ConditionMemoryPressure, metav1.ConditionUnknown, "Measuring",
			"evictions are measured between two reads of the pods' stats")
	}
	if sum.saturatedPods > 0 {
		memcachedstatus.SetCondition(st, cachev1.ConditionConnectionsSaturated, metav1.ConditionTrue, "NearMaxConnections",
			fmt.Sprintf("%s %s %d%% or more of their maxConnections open or refused connections at it: raise memcached.maxConnections or replicaCount",
				texts.CountOf(sum.saturatedPods, len(reads), "pod", "pods"), texts.PluralVerb(sum.saturatedPods, "has", "have"), saturatedPercent))
	} else {
		memcachedstatus.SetCondition(st, cachev1.ConditionConnectionsSaturated, metav1.ConditionFalse, "BelowMaxConnections",
			fmt.Sprintf("%s open", texts.CountOf(sum.stats.Connections, sum.stats.MaxConnections, "connection", "connections")))
	}
}

// announcedConditions are the conditions whose changes the Events say.
var announcedConditions = []string{cachev1.ConditionMemoryPressure, cachev1.ConditionConnectionsSaturated, cachev1.ConditionServersResponsive}

// saidBefore is read, with each announced condition as this controller last wrote it for key.
func (r *Reconciler) saidBefore(key types.NamespacedName, read cachev1.MemcachedStatus) cachev1.MemcachedStatus {
	r.mu.Lock()
	said := r.said[key]
	r.mu.Unlock()
	before := *read.DeepCopy()
	for _, c := range said {
		before.Conditions = slices.DeleteFunc(before.Conditions, func(x cachev1.HelmCondition) bool { return x.Type == c.Type })
		if c.Status != "" {
			before.Conditions = append(before.Conditions, c)
		}
	}
	return before
}

// sayOf keeps the announced conditions of st, as written for key.
func (r *Reconciler) sayOf(key types.NamespacedName, st cachev1.MemcachedStatus) {
	var said []cachev1.HelmCondition
	for _, typ := range announcedConditions {
		c := memcachedstatus.Condition(st, typ)
		c.Type = typ // none: said as none
		said = append(said, c)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.said == nil {
		r.said = map[types.NamespacedName][]cachev1.HelmCondition{}
	}
	r.said[key] = said
}

// notes are the Events to record, once the status is written, for each stats condition that
// changes status; none when none does.
func (r *Reconciler) notes(mc *cachev1.Memcached, before, after cachev1.MemcachedStatus) []func() {
	var notes []func()
	event := func(eventType, reason, message string) {
		notes = append(notes, func() { r.Recorder.Eventf(mc, nil, eventType, reason, "ObserveStats", "%s", message) })
	}
	for _, typ := range []string{cachev1.ConditionMemoryPressure, cachev1.ConditionConnectionsSaturated} {
		was, now := memcachedstatus.Condition(before, typ), memcachedstatus.Condition(after, typ)
		switch {
		case now.Status == was.Status:
		case now.Status == metav1.ConditionTrue:
			event(corev1.EventTypeWarning, typ, now.Message)
		case was.Status == metav1.ConditionTrue:
			event(corev1.EventTypeNormal, typ+"Relieved", now.Message)
		}
	}
	if was, now := memcachedstatus.Condition(before, cachev1.ConditionServersResponsive), memcachedstatus.Condition(after, cachev1.ConditionServersResponsive); now.Status != was.Status {
		switch now.Status {
		case metav1.ConditionFalse:
			event(corev1.EventTypeWarning, cachev1.ReasonServersUnresponsive, now.Message)
		case metav1.ConditionTrue:
			event(corev1.EventTypeNormal, "ServersAnswer", now.Message)
		}
	}
	return notes
}

// remember keeps the pods' reads for the next rates; pods gone are dropped.
func (r *Reconciler) remember(key types.NamespacedName, reads []podRead) {
	if len(reads) == 0 {
		return
	}
	byPod := map[types.UID]memcache.Stats{}
	for _, rd := range reads {
		if rd.err == nil {
			byPod[rd.pod.UID] = rd.stats
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[types.NamespacedName]map[types.UID]memcache.Stats{}
	}
	r.last[key] = byPod
}

// gone drops all that is kept of a Memcached that is gone.
func (r *Reconciler) gone(key types.NamespacedName) {
	r.forget(key)
	r.mu.Lock()
	delete(r.said, key)
	r.mu.Unlock()
}

// forget drops the reads kept of a Memcached that is gone or has no ready pod.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.last, key)
	delete(r.unresponsive, key)
	r.mu.Unlock()
	metrics.Operand.Forget(key)
}

// statsSummary is what summarize makes of one round of reads.
type statsSummary struct {
	stats *cachev1.MemcachedStats // nil: no pod answered
	// measured: at least one pod was read twice, so its rates are known.
	measured      bool
	evictingPods  int
	saturatedPods int
	firstErr      error
}

// summarize adds up the pods' reads. Rates come from pods read before by the same process (a
// restarted memcached counts from zero); a figure that cannot be measured this round keeps its
// last value, so a quiet cache, or an operator restart, changes nothing in status.
func summarize(reads []podRead, prev map[types.UID]memcache.Stats, was *cachev1.MemcachedStats) statsSummary {
	var out statsSummary
	s := &cachev1.MemcachedStats{}
	var used, limit, conns, maxConns, hits, gets, winHits, winGets uint64
	var evictRate float64
	var started time.Time
	for _, rd := range reads {
		if rd.err != nil {
			if out.firstErr == nil {
				out.firstErr = rd.err
			}
			if errors.Is(rd.err, memcache.ErrTooManyConnections) {
				out.saturatedPods++
			}
			continue
		}
		cur := rd.stats
		s.Pods++
		used += cur.Bytes
		limit += cur.LimitMaxBytes
		conns += cur.CurrConnections
		maxConns += cur.MaxConnections
		hits += cur.GetHits
		gets += cur.GetHits + cur.GetMisses
		if cur.LimitMaxBytes > 0 {
			s.MemoryUsedPercent = max(s.MemoryUsedPercent, int32(cur.Bytes*100/cur.LimitMaxBytes))
		}
		if t := cur.Started(); t.After(started) {
			started = t
		}
		saturated := cur.MaxConnections > 0 && cur.CurrConnections*100 >= saturatedPercent*cur.MaxConnections
		if p, ok := prev[rd.pod.UID]; ok && sameProcess(p, cur) {
			out.measured = true
			evicted := cur.Evictions - p.Evictions
			evictRate += float64(evicted) / float64(cur.Time-p.Time)
			if evicted > 0 {
				out.evictingPods++
			}
			winHits += cur.GetHits - p.GetHits
			winGets += cur.GetHits + cur.GetMisses - p.GetHits - p.GetMisses
			saturated = saturated || cur.RejectedConnections > p.RejectedConnections || cur.ListenDisabled > p.ListenDisabled
		}
		if saturated {
			out.saturatedPods++
		}
	}
	if s.Pods == 0 {
		return out
	}
	s.MemoryUsed = *resource.NewQuantity(int64(used>>20)<<20, resource.BinarySI)
	s.MemoryLimit = *resource.NewQuantity(int64(limit), resource.BinarySI)
	s.Connections, s.MaxConnections = int32(conns), int32(maxConns)
	s.LastStartTime = metav1.NewTime(started)
	switch {
	case winGets > 0:
		s.HitRatioPercent = ptr.To(int32(winHits * 100 / winGets))
	case was != nil && was.HitRatioPercent != nil:
		s.HitRatioPercent = was.HitRatioPercent
	case !out.measured && gets > 0:
		s.HitRatioPercent = ptr.To(int32(hits * 100 / gets))
	}
	switch {
	case out.measured:
		s.EvictionsPerSecond = resource.NewMilliQuantity(int64(evictRate*1000), resource.DecimalSI)
	case was != nil:
		s.EvictionsPerSecond = was.EvictionsPerSecond
	}
	out.stats = s
	return out
}

// sameProcess says whether cur is a later read of the memcached process that answered p, whose
// counters have only grown since: a restarted process, or one whose counters a client reset
// (`stats reset`), counts from zero, and its difference is no rate.
func sameProcess(p, cur memcache.Stats) bool {
	return p.Started().Equal(cur.Started()) && cur.Time > p.Time &&
		cur.GetHits >= p.GetHits && cur.GetMisses >= p.GetMisses && cur.Evictions >= p.Evictions &&
		cur.RejectedConnections >= p.RejectedConnections && cur.ListenDisabled >= p.ListenDisabled
}

// SetupWithManager reads each Memcached when it is created (and, for each one there, when the
// operator starts) and when one of its pods becomes ready or stops being ready; after that, every
// Interval while it has a ready pod.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	created := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return true },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	if r.talk == nil {
		r.talk = servertalk.NewConversations()
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("memcached-stats").
		For(managercache.MemcachedObject(), builder.WithPredicates(created)).
		Watches(&corev1.Pod{}, serverset.ToMemcached(), builder.WithPredicates(serverset.ChartObjects, serverset.ReadinessChanged)).
		// The servers' answers, which come beside the workers.
		WatchesRawSource(source.Channel(r.talk.Done(), &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 2)}).
		Complete(r)
}
