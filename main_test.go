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

package main

import "testing"

func TestGoMemLimit(t *testing.T) {
	for _, tt := range []struct {
		goMemLimit, container string
		want                  int64
	}{
		{"", "402653184", 362387862}, // 384Mi: 90%
		{"300MiB", "402653184", 0},   // GOMEMLIMIT wins (the runtime reads it itself)
		{"", "", 0},                  // no limit (outside a pod)
		{"", "not-a-number", 0},
	} {
		if got := goMemLimit(tt.goMemLimit, tt.container); got != tt.want {
			t.Errorf("goMemLimit(%q, %q) = %d, want %d", tt.goMemLimit, tt.container, got, tt.want)
		}
	}
}
