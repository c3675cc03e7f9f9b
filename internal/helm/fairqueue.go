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

package helm

import (
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// newFairQueue is the Helm reconciler's work queue: client-go's rate-limited work queue (its
// deduplication, delays, back-off and metrics), whose order is namespaceTurns instead of the
// order of arrival. The Helm workers install and upgrade every tenant's releases: in order of
// arrival, a tenant who changes many CRs at once queues their upgrades ahead of every other
// tenant's; in turns, another namespace's CR waits for at most one of theirs.
//
// It replaces controller-runtime's priority queue, which has no such order yet
// (kubernetes-sigs/controller-runtime#3261) and puts the initial list and resyncs behind real
// changes: here a change made while the operator starts waits behind its own namespace's initial
// reconciles, not behind every namespace's.
func newFairQueue(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	queue := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[reconcile.Request]{Name: name, Queue: &namespaceTurns{}})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[reconcile.Request]{Name: name, Queue: queue})
	return stopsAtShutdown{workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Name: name, DelayingQueue: delaying})}
}

// stopsAtShutdown hands out no more requests once the queue shuts down, as controller-runtime's
// priority queue does: client-go's would hand out every request still waiting, each reconciled
// with the manager's context already cancelled.
type stopsAtShutdown struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
}

func (q stopsAtShutdown) Get() (reconcile.Request, bool) {
	r, shutdown := q.TypedRateLimitingInterface.Get()
	if !shutdown && q.ShuttingDown() {
		q.Done(r)
		return r, true
	}
	return r, shutdown
}

// namespaceTurns orders requests by namespace in turns: each namespace with requests waiting has
// its own first-in first-out line, and Pop takes the first of the next namespace's line. With a
// single namespace it is first-in first-out. The work queue around it calls it under its lock and
// keeps each request in it at most once.
type namespaceTurns struct {
	turns []string                       // namespaces with requests waiting, the next first
	lines map[string][]reconcile.Request // each namespace's requests, in order of arrival
	n     int
}

var _ workqueue.Queue[reconcile.Request] = &namespaceTurns{}

// Touch is called for a request added again while it waits: it keeps its place.
func (q *namespaceTurns) Touch(reconcile.Request) {}

func (q *namespaceTurns) Push(r reconcile.Request) {
	if q.lines == nil {
		q.lines = map[string][]reconcile.Request{}
	}
	line, waiting := q.lines[r.Namespace]
	if !waiting {
		q.turns = append(q.turns, r.Namespace)
	}
	q.lines[r.Namespace] = append(line, r)
	q.n++
}

func (q *namespaceTurns) Len() int { return q.n }

// Pop takes the first request of the namespace whose turn it is; the namespace's next turn comes
// after every other waiting namespace's. The work queue calls it only when Len is not 0.
func (q *namespaceTurns) Pop() reconcile.Request {
	ns := q.turns[0]
	q.turns[0] = ""
	q.turns = q.turns[1:]
	line := q.lines[ns]
	r := line[0]
	line[0] = reconcile.Request{}
	if line = line[1:]; len(line) > 0 {
		q.lines[ns] = line
		q.turns = append(q.turns, ns)
	} else {
		delete(q.lines, ns)
	}
	q.n--
	return r
}
