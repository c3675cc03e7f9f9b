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
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func req(ns, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

// The Helm reconciler's queue, as its workers take from it: a tenant's many changes queued ahead
// of another tenant's one do not hold it back; within a namespace, and with one namespace alone,
// the order is the order of arrival; a request added again while it waits keeps its place, and
// one added again while it is worked on comes back after it is done.
func TestFairQueueServesNamespacesInTurns(t *testing.T) {
	q := newFairQueue("", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	for _, r := range []reconcile.Request{req("a", "1"), req("a", "2"), req("a", "3"), req("a", "4"), req("b", "1"), req("a", "2"), req("c", "1"), req("b", "2")} {
		q.Add(r)
	}
	if q.Len() != 7 {
		t.Fatalf("Len() = %d, want 7 (a/2 added twice waits once)", q.Len())
	}
	var got []string
	take := func(n int) {
		for range n {
			r, _ := q.Get()
			got = append(got, r.String())
			q.Done(r)
		}
	}
	take(1)
	q.Add(req("c", "2"))
	take(3)
	// b/2 is taken and, while it is worked on, added again: it comes back once it is done, in
	// b's next turn.
	r, _ := q.Get()
	got = append(got, r.String())
	q.Add(r)
	q.Done(r)
	take(q.Len())
	want := []string{"a/1", "b/1", "c/1", "a/2", "b/2", "c/2", "a/3", "b/2", "a/4"}
	if !slices.Equal(got, want) {
		t.Errorf("taken in the order %v, want %v", got, want)
	}
	if q.Len() != 0 {
		t.Errorf("Len() = %d after everything was taken", q.Len())
	}
}

// One namespace alone is served in order of arrival, as a plain work queue would.
func TestFairQueueOneNamespaceIsFirstInFirstOut(t *testing.T) {
	q := &namespaceTurns{}
	for i := range 5 {
		q.Push(req("a", string(rune('0'+i))))
	}
	for i := range 5 {
		if r := q.Pop(); r.Name != string(rune('0'+i)) {
			t.Fatalf("pop %d = %s", i, r)
		}
	}
	if q.Len() != 0 || len(q.turns) != 0 || len(q.lines) != 0 {
		t.Errorf("not empty after every request was taken: %+v", q)
	}
}

// Once shut down, the queue hands out nothing more, though requests still wait.
func TestFairQueueStopsAtShutdown(t *testing.T) {
	q := newFairQueue("", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	q.Add(req("a", "1"))
	q.Add(req("b", "1"))
	q.ShutDown()
	if r, shutdown := q.Get(); !shutdown {
		t.Errorf("Get() after ShutDown handed out %s", r)
	}
}
