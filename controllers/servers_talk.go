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
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/example/memcached-operator/internal/memcache"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A conversation with a cache's servers is a tenant's input as much as its spec: the image is the
// tenant's, and its "memcached" may answer slowly, never, or with garbage. Every conversation with
// a cache is therefore bounded as a whole: its servers are asked at once, within one deadline
// (cacheTimeout), so that no wait multiplies by the number of servers, and each answer is bounded
// in size by the reader (internal/operand).

// cacheTimeout bounds one conversation with all the servers of a cache: connect, ask, answer.
const cacheTimeout = 2 * time.Second

// serverTalksInParallel bounds the servers of one cache asked at once.
const serverTalksInParallel = 16

// serverAnswer is one server's answer.
type serverAnswer[T any] struct {
	pod    *corev1.Pod
	answer T
	err    error
}

// askServers asks every pod's memcached, reached as reach says, all at once
// (serverTalksInParallel at a time) and within one cacheTimeout for them all, and returns the
// answers in the pods' order.
func askServers[T any](ctx context.Context, pods []*corev1.Pod, reach *ServerReach, ask func(ctx context.Context, srv memcache.Server) (T, error)) []serverAnswer[T] {
	ctx, cancel := context.WithTimeout(ctx, cacheTimeout)
	defer cancel()
	answers := make([]serverAnswer[T], len(pods))
	slots := make(chan struct{}, serverTalksInParallel)
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Go(func() {
			answers[i].pod = p
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
			case <-ctx.Done():
				answers[i].err = fmt.Errorf("server %s was not asked within %s: %w", p.Name, cacheTimeout, ctx.Err())
				return
			}
			srv, err := reach.server(ctx, p)
			if err == nil {
				answers[i].answer, err = ask(ctx, srv)
			}
			if err != nil {
				answers[i].err = fmt.Errorf("server %s at %s: %w", p.Name, srv.Addr, err)
			}
		})
	}
	wg.Wait()
	return answers
}

// tenantSlots keeps one tenant from holding more than one worker of a pool at a time for
// conversations with its servers: a namespace takes at most one slot, and a reconcile that finds
// its namespace's slot taken looks again after tenantRetry instead of waiting on a worker. Each
// pool that talks to servers has at least two workers, so another namespace always has one; and
// since each conversation is bounded (cacheTimeout), a slot is never held for long. Within a
// namespace its caches take the slot in turn (first come, first served), so that none of them
// waits for ever behind the others.
type tenantSlots struct {
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

// errTenantBusy says a namespace's slot was taken: look again after tenantRetry.
var errTenantBusy = errors.New("another of the namespace's caches talks to its servers now")

// tenantRetry is how soon a reconcile whose namespace's slot was taken looks again.
const tenantRetry = time.Second

// take takes the slot of the namespace of cache key for it; ok is false when it is taken, or
// another of the namespace's caches waits for it before key, else release gives it back.
func (t *tenantSlots) take(key types.NamespacedName) (release func(), ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ns, now := key.Namespace, time.Now()
	queue := slices.DeleteFunc(t.waiting[ns], func(w waiter) bool { return now.Sub(w.asked) > 3*tenantRetry })
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

func (t *tenantSlots) setWaiting(ns string, queue []waiter) {
	if len(queue) == 0 {
		delete(t.waiting, ns)
		return
	}
	if t.waiting == nil {
		t.waiting = map[string][]waiter{}
	}
	t.waiting[ns] = queue
}
