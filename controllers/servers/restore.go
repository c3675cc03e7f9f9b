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

package servers

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/metrics"
	"github.com/example/memcached-operator/controllers/internal/serverset"
	"github.com/example/memcached-operator/controllers/internal/texts"
	"github.com/example/memcached-operator/internal/rollout"
)

// A server whose pod was replaced (a drain, an eviction, a deletion) by one that keeps a copy of
// its memory file on its volume (persistence): whether the new pod restored the copy is for its
// memcached to say once it serves, and status says it, with how long the server was away, from
// the old pod's stop (status.rollout.servers[].stopTime) to the new memcached's start, both as
// the API server and the kubelet recorded them.

// judgeReplaced asks the memcached of a server whose pod was replaced by one that keeps a copy of
// its memory file (persistence) whether it restored the copy (rollout.Restored), once it serves,
// and records the answer in its entry e (the old pod's until then), with what says so.
func (r *Reconciler) judgeReplaced(mc *cachev1.Memcached, e *cachev1.ServerRollout, s rollout.Seen) (done bool, announce func()) {
	if e == nil {
		return true, nil
	}
	if !serverset.PodReady(s.Pod) || s.Pod.Status.PodIP == "" {
		return false, nil // its readiness brings the cache back
	}
	st, err, ok := r.readStats(mc, s.Pod, "after its replacement")
	if !ok || err != nil {
		return false, nil
	}
	stop := s.Next.StopTime
	*e = *s.Next
	e.StopTime = nil // the new pod's, once it is asked to stop
	if why := rollout.Restored(s.Pod, st.Started()); why != "" {
		empty := e.StartedEmpty
		return true, func() {
			r.Recorder.Eventf(mc, s.Pod, corev1.EventTypeWarning, cachev1.WayStartedEmpty, "ObserveServers", "server %s started empty: %s", s.Server, empty.Message)
			metrics.CountStartedEmpty(empty.Reason)
		}
	}
	e.StartedEmpty = nil
	e.Restored = &cachev1.ServerRestore{Items: int64(st.CurrItems), AwaySeconds: rollout.AwaySeconds(s.Pod, stop), Time: metav1.Now().Rfc3339Copy()}
	msg := restoredMessage(s.Server, e.Restored)
	return true, func() {
		r.Recorder.Eventf(mc, s.Pod, corev1.EventTypeNormal, cachev1.CacheRestored, "ObserveServers", "%s", msg)
		metrics.CountRestored()
	}
}

// restoredMessage says that a server's new pod restored its items from its volume.
func restoredMessage(server string, rst *cachev1.ServerRestore) string {
	away := "for a time the operator did not see begin"
	if rst.AwaySeconds != nil {
		away = fmt.Sprintf("for %ds", *rst.AwaySeconds)
	}
	return fmt.Sprintf("server %s's pod was replaced and the new one restored %s from its volume: the server was away %s, and its items missed the writes and deletes of that time",
		server, texts.Count(rst.Items, "item", "items"), away)
}
