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
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// Conversations has the servers reconciler's conversations with the servers held off its workers:
// the workers write every cache's status, and one tenant's servers that answer slowly or never
// must not keep another tenant's status waiting. A reconcile that needs an answer asks for it
// (Ask) and goes on; the conversation runs beside, within CacheTimeout, one at a time per cache
// and per namespace (the tenant's slot); its answer waits for the reconcile that the cache's event
// brings. An answer is kept for the question asked (which names the pods by UID and what it asks
// of them), taken once, and forgotten after answerTTL: it is a memo of what a server said, never
// of what the operator decided.
type Conversations struct {
	mu      sync.Mutex
	running map[types.NamespacedName]bool
	answers map[question]answer
	slots   TenantSlots
	// done has the cache of each conversation that ended reconciled again.
	done chan event.GenericEvent
}

// question is what a reconcile asks of a cache's servers.
type question struct {
	cache types.NamespacedName
	what  string
}

type answer struct {
	value any
	err   error
	at    time.Time
}

// answerTTL is how long an answer waits to be taken.
const answerTTL = time.Minute

// NewConversations starts with no conversation.
func NewConversations() *Conversations {
	return &Conversations{running: map[types.NamespacedName]bool{}, answers: map[question]answer{}, done: make(chan event.GenericEvent, 1024)}
}

// Ask returns the answer to question what of cache key's servers, once talk has given it (ok);
// until then it starts talk, unless a conversation with the cache or its namespace runs already,
// and ok is false: the cache is reconciled again when the answer comes.
func (c *Conversations) Ask(key types.NamespacedName, what string, talk func(ctx context.Context) (any, error)) (value any, err error, ok bool) {
	q := question{cache: key, what: what}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, a := range c.answers {
		if time.Since(a.at) > answerTTL {
			delete(c.answers, k)
		}
	}
	if a, found := c.answers[q]; found {
		delete(c.answers, q)
		return a.value, a.err, true
	}
	if c.running[key] {
		return nil, nil, false
	}
	release, taken := c.slots.Take(key)
	if !taken {
		return nil, nil, false
	}
	c.running[key] = true
	go func() {
		defer release()
		ctx, cancel := context.WithTimeout(context.Background(), CacheTimeout)
		value, err := talk(ctx)
		cancel()
		c.mu.Lock()
		c.answers[q] = answer{value: value, err: err, at: time.Now()}
		delete(c.running, key)
		c.mu.Unlock()
		mc := &cachev1.Memcached{}
		mc.Namespace, mc.Name = key.Namespace, key.Name
		c.done <- event.GenericEvent{Object: mc}
	}()
	return nil, nil, false
}

// PodUIDs names pods by UID, in order: a question about them is about these pods alone.
func PodUIDs(pods []*corev1.Pod) string {
	uids := make([]string, 0, len(pods))
	for _, p := range pods {
		uids = append(uids, string(p.UID))
	}
	slices.Sort(uids)
	return strings.Join(uids, ",")
}

// Forget drops the answers kept for a cache that is gone.
func (c *Conversations) Forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q := range c.answers {
		if q.cache == key {
			delete(c.answers, q)
		}
	}
}

// Done has the cache of each conversation that ended, for the controller to reconcile again (a
// source.Channel).
func (c *Conversations) Done() <-chan event.GenericEvent { return c.done }
