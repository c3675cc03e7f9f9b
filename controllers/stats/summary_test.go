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

package stats

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/memcache"
)

func TestSummarize(t *testing.T) {
	pod := func(uid string) *corev1.Pod { return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}} }
	// base: a pod 100 s up at 1000, 64 MiB of item memory, a quarter used.
	base := memcache.Stats{Time: 1000, Uptime: 100, GetHits: 80, GetMisses: 20, Evictions: 5,
		Bytes: 16 << 20, LimitMaxBytes: 64 << 20, CurrConnections: 10, MaxConnections: 1024}
	later := func(dt int64, f func(*memcache.Stats)) memcache.Stats {
		s := base
		s.Time, s.Uptime = s.Time+dt, s.Uptime+dt
		f(&s)
		return s
	}
	was := &cachev1.MemcachedStats{HitRatioPercent: ptr.To(int32(42)), EvictionsPerSecond: resource.NewMilliQuantity(1500, resource.DecimalSI)}

	for _, tc := range []struct {
		name      string
		reads     []podRead
		prev      map[types.UID]memcache.Stats
		was       *cachev1.MemcachedStats
		hit       *int32
		evictions *int64 // milli
		measured  bool
		evicting  int
		saturated int
		noStats   bool
	}{{
		name:  "a first read: the hit ratio since start, no rates",
		reads: []podRead{{pod: pod("a"), stats: base}},
		hit:   ptr.To(int32(80)),
	}, {
		name:  "a first read after an operator restart keeps the last figures",
		reads: []podRead{{pod: pod("a"), stats: base}}, was: was,
		hit: ptr.To(int32(42)), evictions: ptr.To(int64(1500)),
	}, {
		name: "a second read: rates over the interval",
		reads: []podRead{{pod: pod("a"), stats: later(10, func(s *memcache.Stats) {
			s.Evictions += 20
			s.GetHits += 5
			s.GetMisses += 5
		})}},
		prev: map[types.UID]memcache.Stats{"a": base}, was: was,
		hit: ptr.To(int32(50)), evictions: ptr.To(int64(2000)), measured: true, evicting: 1,
	}, {
		name:  "a quiet interval: no evictions, the hit ratio stays",
		reads: []podRead{{pod: pod("a"), stats: later(30, func(*memcache.Stats) {})}},
		prev:  map[types.UID]memcache.Stats{"a": base}, was: was,
		hit: ptr.To(int32(42)), evictions: ptr.To(int64(0)), measured: true,
	}, {
		name: "a restarted memcached counts from zero: no rate from it",
		reads: []podRead{{pod: pod("a"), stats: later(30, func(s *memcache.Stats) {
			s.Uptime, s.Evictions, s.GetHits, s.GetMisses = 3, 0, 0, 0
		})}},
		prev: map[types.UID]memcache.Stats{"a": base},
		hit:  nil,
	}, {
		name: "counters a client reset (stats reset): no rate, the last figures stay",
		reads: []podRead{{pod: pod("a"), stats: later(30, func(s *memcache.Stats) {
			s.Evictions, s.GetHits, s.GetMisses = 0, 1, 0
		})}},
		prev: map[types.UID]memcache.Stats{"a": base}, was: was,
		hit: ptr.To(int32(42)), evictions: ptr.To(int64(1500)),
	}, {
		name: "connections refused in the interval",
		reads: []podRead{{pod: pod("a"), stats: later(30, func(s *memcache.Stats) { s.RejectedConnections = 3 })},
			{pod: pod("b"), err: memcache.ErrTooManyConnections}},
		prev: map[types.UID]memcache.Stats{"a": base}, was: was,
		hit: ptr.To(int32(42)), evictions: ptr.To(int64(0)), measured: true, saturated: 2,
	}, {
		name:      "90% of maxConnections open",
		reads:     []podRead{{pod: pod("a"), stats: later(0, func(s *memcache.Stats) { s.CurrConnections = 922 })}},
		hit:       ptr.To(int32(80)),
		saturated: 1,
	}, {
		name:    "no pod answered",
		reads:   []podRead{{pod: pod("a"), err: errors.New("i/o timeout")}},
		noStats: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := summarize(tc.reads, tc.prev, tc.was)
			if tc.noStats {
				if got.stats != nil || got.firstErr == nil {
					t.Fatalf("stats = %+v, err %v; want none and the error", got.stats, got.firstErr)
				}
				return
			}
			s := got.stats
			if got.measured != tc.measured || got.evictingPods != tc.evicting || got.saturatedPods != tc.saturated {
				t.Errorf("measured %v, evicting %d, saturated %d; want %v, %d, %d", got.measured, got.evictingPods, got.saturatedPods, tc.measured, tc.evicting, tc.saturated)
			}
			if (s.HitRatioPercent == nil) != (tc.hit == nil) || s.HitRatioPercent != nil && *s.HitRatioPercent != *tc.hit {
				t.Errorf("hitRatioPercent = %v, want %v", deref(s.HitRatioPercent), deref(tc.hit))
			}
			if (s.EvictionsPerSecond == nil) != (tc.evictions == nil) || s.EvictionsPerSecond != nil && s.EvictionsPerSecond.MilliValue() != *tc.evictions {
				t.Errorf("evictionsPerSecond = %v, want %v milli", s.EvictionsPerSecond, deref(tc.evictions))
			}
			if s.MemoryUsedPercent != 25 || s.MemoryLimit.Value() != int64(64<<20)*int64(s.Pods) {
				t.Errorf("memory %d%% of %s, want 25%% of 64Mi per pod", s.MemoryUsedPercent, s.MemoryLimit.String())
			}
		})
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
