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
	"encoding/json"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/labels"
)

// Servers that start empty. What cannot be warm (a pod replaced by a rollout, a drain, an
// eviction or a deletion; a memcached that crashed, or restarted without its memory file) starts
// a server empty. The stats controller sees it in memcached's own figures: a new process of a
// server that held items holds (nearly) none. It says so in an Event and the metric for every such
// server, and, outside a change the operator made (whose record says how it went), in the
// StartedEmpty annotation of the StatefulSet, from which the CacheWarm condition is rendered.

// emptyStart is the StartedEmpty annotation: the server that last started empty outside a change
// the operator made, why and when.
type emptyStart struct {
	Server string      `json:"server"`
	Reason string      `json:"reason"`
	Why    string      `json:"why"`
	At     metav1.Time `json:"at"`
}

// emptyStartOf reads the StartedEmpty annotation of a StatefulSet; nil when it has none that
// parses.
func emptyStartOf(s *appsv1.StatefulSet) *emptyStart {
	v, ok := s.Annotations[labels.StartedEmpty]
	if !ok {
		return nil
	}
	e := &emptyStart{}
	if err := json.Unmarshal([]byte(v), e); err != nil {
		return nil
	}
	return e
}

// serverHeld is what a server's memcached held at the stats controller's last read of it.
type serverHeld struct {
	pod     types.UID
	started time.Time
	items   uint64
}

// emptyStarts remembers, per Memcached and server, what each server held at the last read, to
// tell a server that started empty. It is the operator's memory: a server that started empty
// while no operator ran is not seen.
type emptyStarts struct {
	mu   sync.Mutex
	held map[types.NamespacedName]map[string]serverHeld
}

// observe compares the reads with what each server held before, and says (an Event, the metric,
// the StartedEmpty annotation) which servers started empty and why. It then remembers the reads.
func (e *emptyStarts) observe(ctx context.Context, c client.Client, r events.EventRecorder, mc *cachev1.Memcached, reads []podRead) error {
	key := client.ObjectKeyFromObject(mc)
	servers, err := serversOf(ctx, c, mc)
	if err != nil || servers == nil {
		return err
	}
	e.mu.Lock()
	prev := e.held[key]
	// A server not read now (down a moment, unreadable) is compared at its next read; one the
	// StatefulSet no longer has (scaled in) is forgotten, so that one added later is new.
	now := map[string]serverHeld{}
	for i := range replicasOf(servers) {
		name := fmt.Sprintf("%s-%d", servers.Name, i)
		if was, ok := prev[name]; ok {
			now[name] = was
		}
	}
	for _, rd := range reads {
		if rd.err == nil {
			now[rd.pod.Name] = serverHeld{pod: rd.pod.UID, started: rd.stats.Started(), items: rd.stats.CurrItems}
		}
	}
	if e.held == nil {
		e.held = map[types.NamespacedName]map[string]serverHeld{}
	}
	e.held[key] = now
	e.mu.Unlock()

	for _, rd := range reads {
		was, ok := prev[rd.pod.Name]
		if rd.err != nil || !ok || (was.pod == rd.pod.UID && was.started.Equal(rd.stats.Started())) {
			continue // the same process, or one never read before
		}
		if notRestored(was.items, rd.stats.CurrItems) == "" {
			continue // nothing held, or restored
		}
		rec := resizeRecordOf(servers)
		if rec != nil && rec.Outcome == outcomeResizing && rec.Way == WayWarmRestart {
			continue // the operator restarts the servers and checks each restart itself
		}
		reason, why := whyEmpty(rd.pod, was, rec, warmTemplate(&servers.Spec.Template))
		startedEmptyMetrics.WithLabelValues(reason).Inc()
		r.Eventf(mc, rd.pod, corev1.EventTypeWarning, WayStartedEmpty, "ObserveStats", "server %s started empty: it held %d items, now %d: %s",
			rd.pod.Name, was.items, rd.stats.CurrItems, why)
		log.FromContext(ctx).Info("server started empty", "pod", rd.pod.Name, "reason", reason, "before", was.items, "now", rd.stats.CurrItems)
		if reason == emptyRollout {
			continue // the rollout's record says so already (CacheWarm)
		}
		patch := client.MergeFrom(servers.DeepCopy())
		b, _ := json.Marshal(emptyStart{Server: rd.pod.Name, Reason: reason, Why: why, At: metav1.Now()}) // plain fields
		metav1.SetMetaDataAnnotation(&servers.ObjectMeta, labels.StartedEmpty, string(b))
		if err := c.Patch(ctx, servers, patch); err != nil {
			return fmt.Errorf("record that server %s started empty on StatefulSet %s: %w", rd.pod.Name, servers.Name, err)
		}
	}
	return nil
}

// rolloutWindow is how long after a change rolled out a new pod is counted as that rollout's: a
// rollout replaces a server every few seconds (minReadySeconds), not for hours.
const rolloutWindow = 30 * time.Minute

// whyEmpty says why server p, which held was at the last read, started empty: its reason label
// and words. rec is the record of the servers' last change; warm says whether they run with their
// memory file.
func whyEmpty(p *corev1.Pod, was serverHeld, rec *resizeRecord, warm bool) (reason, why string) {
	if was.pod != p.UID {
		if rec != nil && rec.Outcome == outcomeRolledOut && rec.At != nil && !p.CreationTimestamp.Before(rec.At) &&
			p.CreationTimestamp.Sub(rec.At.Time) < rolloutWindow {
			return emptyRollout, fmt.Sprintf("its pod was replaced by the rollout of %s (%s)", rec.what(), rec.Why)
		}
		return emptyPodReplaced, "its pod was replaced (a node drained, an eviction or a deletion): a new pod's memory starts empty"
	}
	exit := "it restarted"
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.LastTerminationState.Terminated; cs.Name == labels.ChartName && t != nil {
			exit = fmt.Sprintf("memcached stopped (%s, exit code %d) and restarted", t.Reason, t.ExitCode)
		}
	}
	if warm {
		return emptyRestarted, exit + " without restoring its memory file: it was killed before it could save it (a crash, the memory limit, the end of the grace period)"
	}
	return emptyRestarted, exit + ", and without its memory file (keepCacheAcross MemoryChanges) a restarted memcached is empty"
}

// forget drops what is remembered of a Memcached that is gone (not of one whose servers are all
// down a moment: they are compared when they are back).
func (e *emptyStarts) forget(key types.NamespacedName) {
	e.mu.Lock()
	delete(e.held, key)
	e.mu.Unlock()
}
