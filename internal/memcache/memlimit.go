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
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// memcached changes its item memory at runtime: `cache_memlimit <MB>` answers OK and `stats` then
// shows the new limit_maxbytes, with no restart and every key kept (checked with memcached 1.6.18,
// docs/autopilot.md). Lowered below what it holds, it answers OK too, but keeps the memory it has
// allocated (`stats slabs` total_malloced) and evicts to store new items; it gives memory back
// only as slab pages empty (items expire or are deleted) and its slab mover frees them.

// SetMemoryLimit sets the item memory of the memcached server srv to mb megabytes
// (`cache_memlimit`), within timeout for the whole exchange.
func SetMemoryLimit(ctx context.Context, srv Server, mb int32, timeout time.Duration) error {
	reply, err := exchange(ctx, srv, fmt.Sprintf("cache_memlimit %d\r\n", mb), timeout, func(line string) bool { return true })
	if err != nil {
		return err
	}
	if len(reply) != 1 || reply[0] != "OK" {
		return fmt.Errorf("memcached refused cache_memlimit %d: %s", mb, strings.Join(reply, " "))
	}
	return nil
}

// ReadAllocated reads how many bytes of item memory the memcached server srv has allocated
// (`stats slabs` total_malloced): what it holds whatever its limit, and the least its container
// must keep.
func ReadAllocated(ctx context.Context, srv Server, timeout time.Duration) (uint64, error) {
	reply, err := exchange(ctx, srv, "stats slabs\r\n", timeout, func(line string) bool { return line == "END" })
	if err != nil {
		return 0, err
	}
	for _, line := range reply {
		parts := strings.Fields(line)
		if len(parts) == 3 && parts[0] == "STAT" && parts[1] == "total_malloced" {
			n, err := strconv.ParseUint(parts[2], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("memcached stat total_malloced: %w", err)
			}
			return n, nil
		}
	}
	return 0, errors.New("memcached's stats slabs lack total_malloced")
}

// RefreshCertificates makes the memcached server srv read its certificate files again
// (`refresh_certs`, memcached 1.5.13 and later): the kubelet has brought a renewed certificate into
// the pod, and memcached serves it to the next handshake, without a restart.
func RefreshCertificates(ctx context.Context, srv Server, timeout time.Duration) error {
	reply, err := exchange(ctx, srv, "refresh_certs\r\n", timeout, func(line string) bool { return true })
	if err != nil {
		return err
	}
	if len(reply) != 1 || reply[0] != "OK" {
		return fmt.Errorf("memcached refused refresh_certs: %s", strings.Join(reply, " "))
	}
	return nil
}

// exchange sends one command to the memcached server srv and returns the reply's lines up to
// and including the one last says ends it; a reply beyond StatsReplyLimit is not memcached's.
func exchange(ctx context.Context, srv Server, command string, timeout time.Duration, last func(string) bool) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := srv.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	if _, err := io.WriteString(conn, command); err != nil {
		return nil, err
	}
	var lines []string
	sc := bufio.NewScanner(io.LimitReader(conn, StatsReplyLimit))
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "ERROR Too many open connections" {
			return nil, ErrTooManyConnections
		}
		lines = append(lines, line)
		if last(line) {
			return lines, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("memcached's reply ended early")
}
