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

package texts

import "testing"

func TestTexts(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Count(1, "server", "servers"), "1 server"},
		{Count(int32(0), "server", "servers"), "0 servers"},
		{CountOf(1, 1, "pod", "pods"), "1 of 1 pod"},
		{CountOf(int64(2), 3, "pod", "pods"), "2 of 3 pods"},
		{AvailableText(1, 3, "server", "servers"), "1 of 3 servers is available"},
		{AvailableText(2, 3, "server", "servers"), "2 of 3 servers are available"},
		{PluralVerb(uint64(1), "runs", "run"), "runs"},
		{PerSecond(123.4), "123"},
		{PerSecond(2.345), "2.3"},
		{PerSecond(0.0456), "0.05"},
		{PerSecond(-12.6), "-13"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}
