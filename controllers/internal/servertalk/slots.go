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

package servertalk

import (
	"errors"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TenantSlots keeps one tenant from holding more than one worker of a pool at a time for
// conversations with its servers: a namespace takes at most one slot, and a reconcile that finds
// its namespace's slot taken looks again after TenantRetry instead of waiting on a worker. Each
// pool that talks to servers has at least two workers, so another namespace always has one; and
// since each conversation is bounded (CacheTimeout), a slot is never held for long. Within a
// namespace its caches take the slot in turn (first come, first served), so that none of them
// waits for ever behind the others.
type TenantSlots struct {
	mu    sync.Mutex
	taken map[string]bool
	// waiting are, per namespace, the caches that found its slot taken, in order, and since when
	// each last asked: one that stops asking (deleted, or done otherwise) loses its turn.
	waiting map[string][]waiter
}

type waiter struct {
	name  string
	asked time.Time
}

// ErrTenantBusy says a namespace's slot was taken: look again after TenantRetry.
var ErrTenantBusy = errors.New("another of the namespace's caches talks to its servers now")

// TenantRetry is how soon a reconcile whose namespace's slot was taken looks again.
const TenantRetry = time.Second

// Take takes the slot of the namespace of cache key for it; ok is false when it is taken, or
// another of the namespace's caches waits for it before key, else release gives it back.
func (t *TenantSlots) Take(key types.NamespacedName) (release func(), ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ns, now := key.Namespace, time.Now()
	queue := slices.DeleteFunc(t.waiting[ns], func(w waiter) bool { return now.Sub(w.asked) > 3*TenantRetry })
	at := slices.IndexFunc(queue, func(w waiter) bool { return w.name == key.Name })
	if t.taken[ns] || (len(queue) > 0 && at != 0) {
		if at < 0 {
			queue = append(queue, waiter{name: key.Name})
			at = len(queue) - 1
		}
		queue[at].asked = now
		t.setWaiting(ns, queue)
		return nil, false
	}
	if at == 0 {
		queue = queue[1:]
	}
	t.setWaiting(ns, queue)
	if t.taken == nil {
		t.taken = map[string]bool{}
	}
	t.taken[ns] = true
	return func() {
		t.mu.Lock()
		delete(t.taken, ns)
		t.mu.Unlock()
	}, true
}

func (t *TenantSlots) setWaiting(ns string, queue []waiter) {
	if len(queue) == 0 {
		delete(t.waiting, ns)
		return
	}
	if t.waiting == nil {
		t.waiting = map[string][]waiter{}
	}
	t.waiting[ns] = queue
}
