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

package memcache

import (
	"errors"
	"strings"
	"testing"
)

// A reply as memcached 1.6 writes it, cut to the figures read and a few others.
const statsReply = "STAT pid 1\r\nSTAT uptime 120\r\nSTAT time 1795526987\r\nSTAT version 1.6.38\r\n" +
	"STAT max_connections 1024\r\nSTAT curr_connections 3\r\nSTAT rejected_connections 0\r\n" +
	"STAT get_hits 90\r\nSTAT get_misses 10\r\nSTAT limit_maxbytes 67108864\r\nSTAT listen_disabled_num 0\r\n" +
	"STAT bytes 1048576\r\nSTAT curr_items 1000\r\nSTAT evictions 7\r\nEND\r\n"

func TestParseStats(t *testing.T) {
	s, err := ParseStats(strings.NewReader(statsReply))
	if err != nil {
		t.Fatal(err)
	}
	want := Stats{Time: 1795526987, Uptime: 120, GetHits: 90, GetMisses: 10, Evictions: 7, Bytes: 1 << 20,
		LimitMaxBytes: 64 << 20, CurrConnections: 3, MaxConnections: 1024, CurrItems: 1000}
	if s != want {
		t.Errorf("ParseStats = %+v, want %+v", s, want)
	}
	if got := s.Started().Unix(); got != 1795526987-120 {
		t.Errorf("Started = %d", got)
	}

	for name, tc := range map[string]struct {
		reply   string
		wantErr string
	}{
		"a figure missing":           {strings.Replace(statsReply, "STAT evictions 7\r\n", "", 1), "lack evictions"},
		"cut before END":             {strings.TrimSuffix(statsReply, "END\r\n"), "ended before END"},
		"not memcached":              {"HTTP/1.1 400 Bad Request\r\n", "not a memcached stats reply"},
		"a figure that is no number": {strings.Replace(statsReply, "evictions 7", "evictions seven", 1), "stat evictions"},
		"negative counter":           {strings.Replace(statsReply, "get_hits 90", "get_hits -1", 1), "stat get_hits"},
	} {
		if _, err := ParseStats(strings.NewReader(tc.reply)); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: err = %v, want one with %q", name, err, tc.wantErr)
		}
	}
	if _, err := ParseStats(strings.NewReader("ERROR Too many open connections\r\n")); !errors.Is(err, ErrTooManyConnections) {
		t.Errorf("a refused connection: err = %v, want ErrTooManyConnections", err)
	}
}
