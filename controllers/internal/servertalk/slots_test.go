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
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// A namespace takes one slot at a time; other namespaces are not held up; within a namespace the
// caches that asked take it in turn, and one that stops asking loses its turn.
func TestTenantSlots(t *testing.T) {
	var slots TenantSlots
	key := func(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	releaseA1, ok := slots.Take(key("a", "1"))
	if !ok {
		t.Fatal("a free slot was not taken")
	}
	if _, ok := slots.Take(key("a", "2")); ok {
		t.Error("a second cache of namespace a took a slot while the first holds it")
	}
	if _, ok := slots.Take(key("a", "3")); ok {
		t.Error("a third cache of namespace a took a slot while the first holds it")
	}
	releaseB, ok := slots.Take(key("b", "1"))
	if !ok {
		t.Error("namespace b waited for namespace a")
	}
	releaseB()
	releaseA1()
	if _, ok := slots.Take(key("a", "3")); ok {
		t.Error("cache 3 took the slot before cache 2, which asked first")
	}
	release2, ok := slots.Take(key("a", "2"))
	if !ok {
		t.Fatal("cache 2, first in line, did not get the slot")
	}
	release2()
	// Cache 3 stops asking: it loses its turn.
	slots.waiting["a"][0].asked = time.Now().Add(-time.Minute)
	release4, ok := slots.Take(key("a", "4"))
	if !ok {
		t.Error("a cache waited behind one that stopped asking")
	}
	release4()
}
