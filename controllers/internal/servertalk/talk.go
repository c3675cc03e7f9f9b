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

// Package servertalk is how the controllers talk to a cache's memcached servers: how a server is
// reached (its address and, when it serves TLS, the client side), every server of a cache asked
// at once within one deadline, one conversation at a time per namespace (a tenant's slot), and
// conversations held off the reconcile workers.
//
// A conversation with a cache's servers is a tenant's input as much as its spec: the image is the
// tenant's, and its "memcached" may answer slowly, never, or with garbage. Every conversation with
// a cache is therefore bounded as a whole: its servers are asked at once, within one deadline
// (CacheTimeout), so that no wait multiplies by the number of servers, and each answer is bounded
// in size by the reader (internal/memcache).
package servertalk

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/example/memcached-operator/internal/memcache"
)

// CacheTimeout bounds one conversation with all the servers of a cache: connect, ask, answer.
const CacheTimeout = 2 * time.Second

// serverTalksInParallel bounds the servers of one cache asked at once.
const serverTalksInParallel = 16

// Answer is one server's answer.
type Answer[T any] struct {
	Pod   *corev1.Pod
	Value T
	Err   error
}

// Ask asks every pod's memcached, reached as reach says, all at once
// (serverTalksInParallel at a time) and within one CacheTimeout for them all, and returns the
// answers in the pods' order.
func Ask[T any](ctx context.Context, pods []*corev1.Pod, reach *Reach, ask func(ctx context.Context, srv memcache.Server) (T, error)) []Answer[T] {
	ctx, cancel := context.WithTimeout(ctx, CacheTimeout)
	defer cancel()
	answers := make([]Answer[T], len(pods))
	slots := make(chan struct{}, serverTalksInParallel)
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Go(func() {
			answers[i].Pod = p
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
			case <-ctx.Done():
				answers[i].Err = fmt.Errorf("server %s was not asked within %s: %w", p.Name, CacheTimeout, ctx.Err())
				return
			}
			srv, err := reach.Server(ctx, p)
			if err == nil {
				answers[i].Value, err = ask(ctx, srv)
			}
			if err != nil {
				answers[i].Err = fmt.Errorf("server %s at %s: %w", p.Name, srv.Addr, err)
			}
		})
	}
	wg.Wait()
	return answers
}
