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

// Stats are the figures of memcached's `stats` command that the operator reports. The counters
// count from the process's start.
type Stats struct {
	// Time is the server's clock and Uptime the seconds since the process started, so that
	// Time-Uptime is its start, the same on every read.
	Time, Uptime int64
	GetHits      uint64
	GetMisses    uint64
	Evictions    uint64
	// Bytes stored in items, of LimitMaxBytes (memcached's -m).
	Bytes, LimitMaxBytes uint64
	// CurrConnections open (memcached counts its listeners too), of MaxConnections (its -c).
	CurrConnections, MaxConnections uint64
	// RejectedConnections counts connections memcached refused at MaxConnections (1.6's default),
	// ListenDisabled the times it stopped accepting them instead (-o maxconns_fast=false).
	RejectedConnections, ListenDisabled uint64
	// CurrItems are the items it holds: a restart with its memory file keeps them.
	CurrItems uint64
}

// ErrTooManyConnections is memcached's answer to a connection beyond its maxConnections: the
// operator's read then tells that the pod is saturated, and nothing else.
var ErrTooManyConnections = errors.New("memcached refused the connection: too many open connections")

// StatsReplyLimit bounds what ReadStats reads: memcached's reply is about 4 KiB, and a pod that
// answers more is not memcached.
const StatsReplyLimit = 64 << 10

// ReadStats asks the memcached server srv for its `stats` over the text protocol, within timeout
// for the whole exchange.
func ReadStats(ctx context.Context, srv Server, timeout time.Duration) (Stats, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := srv.dial(ctx)
	if err != nil {
		return Stats{}, err
	}
	defer func() { _ = conn.Close() }()
	if _, err := io.WriteString(conn, "stats\r\n"); err != nil {
		return Stats{}, err
	}
	return ParseStats(io.LimitReader(conn, StatsReplyLimit))
}

// ParseStats reads a `stats` reply up to its END line. Each figure the operator reports must be
// there: a reply without one is an error, not a zero.
func ParseStats(r io.Reader) (Stats, error) {
	var s Stats
	fields := map[string]*uint64{
		"get_hits": &s.GetHits, "get_misses": &s.GetMisses, "evictions": &s.Evictions,
		"bytes": &s.Bytes, "limit_maxbytes": &s.LimitMaxBytes,
		"curr_connections": &s.CurrConnections, "max_connections": &s.MaxConnections,
		"listen_disabled_num": &s.ListenDisabled, "rejected_connections": &s.RejectedConnections,
		"curr_items": &s.CurrItems,
	}
	signed := map[string]*int64{"time": &s.Time, "uptime": &s.Uptime}
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "END" {
			for name := range fields {
				if !seen[name] {
					return Stats{}, fmt.Errorf("memcached stats lack %s", name)
				}
			}
			for name := range signed {
				if !seen[name] {
					return Stats{}, fmt.Errorf("memcached stats lack %s", name)
				}
			}
			return s, nil
		}
		if line == "ERROR Too many open connections" {
			return Stats{}, ErrTooManyConnections
		}
		parts := strings.Fields(line)
		if len(parts) != 3 || parts[0] != "STAT" {
			// What answered goes no further: the error reaches the CR's status.
			return Stats{}, errors.New("not a memcached stats reply")
		}
		var err error
		if p, ok := fields[parts[1]]; ok {
			*p, err = strconv.ParseUint(parts[2], 10, 64)
		} else if p, ok := signed[parts[1]]; ok {
			*p, err = strconv.ParseInt(parts[2], 10, 64)
		}
		if err != nil {
			return Stats{}, fmt.Errorf("memcached stat %s: %w", parts[1], err)
		}
		seen[parts[1]] = true
	}
	if err := sc.Err(); err != nil {
		return Stats{}, err
	}
	return Stats{}, errors.New("memcached stats reply ended before END")
}

// Started is when the process started, by its own clock.
func (s Stats) Started() time.Time { return time.Unix(s.Time-s.Uptime, 0) }
