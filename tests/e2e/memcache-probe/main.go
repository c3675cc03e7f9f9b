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

// Command memcache-probe talks to memcached over its text protocol, from inside the cluster:
//
//	memcache-probe -addr memcached-sample:11211 -keys 100   store keys and read each back
//	memcache-probe -addr ... -duration 5m -interval 50ms     keep probing; report failures
//	memcache-probe -addr ... -linger 30s                     probe until SIGTERM, report, stay up 30s
//	                                                         (so the report can be read from the log)
//
// Each key is stored and read on one connection: memcached pods do not share keys.
//
// It prints one JSON line with the counts and exits non-zero when a request failed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

type result struct {
	Requests   int     `json:"requests"`
	Failures   int     `json:"failures"`
	LongestGap float64 `json:"longestGapSeconds"` // longest time without a successful request
	FirstError string  `json:"firstError,omitempty"`
}

func main() {
	addr := flag.String("addr", "", "memcached host:port")
	keys := flag.Int("keys", 0, "store and read back this many keys, then stop")
	duration := flag.Duration("duration", 0, "keep probing this long (until SIGTERM if 0 and -keys is 0)")
	interval := flag.Duration("interval", 50*time.Millisecond, "pause between probes")
	linger := flag.Duration("linger", 0, "after the report, stay up this long")
	valueSize := flag.Int("value-size", 0, "probe with values of this many bytes under ever new keys, which fills the cache until it evicts (0: small values under 1000 keys)")
	ttl := flag.Int("ttl", 0, "with -value-size: the items expire after this many seconds (0: never), so the cache empties once the probe stops")
	waitReady := flag.Duration("wait-ready", 0, "before probing, wait this long at most for a first served request, uncounted (a new Service is routed only once kube-proxy has synced it)")
	flag.Parse()
	if *addr == "" {
		fmt.Fprintln(os.Stderr, "-addr is required")
		os.Exit(2)
	}

	awaitServed(*addr, *waitReady, *interval)
	var res result
	if *keys > 0 {
		res = fixedKeys(*addr, *keys)
	} else {
		res = probe(*addr, *duration, *interval, *valueSize, *ttl)
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	time.Sleep(*linger)
	if res.Failures > 0 || res.Requests == 0 {
		os.Exit(1)
	}
}

func fixedKeys(addr string, n int) result {
	var res result
	for i := 0; i < n; i++ {
		res.record(setGet(addr, fmt.Sprintf("probe-%d", i), fmt.Sprintf("value-%d", i)))
	}
	return res
}

// awaitServed retries a request until one is served or wait has passed, and says which on stderr.
func awaitServed(addr string, wait, interval time.Duration) {
	if wait <= 0 {
		return
	}
	deadline := time.Now().Add(wait)
	for {
		err := setGet(addr, "ready", "1")
		if err == nil {
			fmt.Fprintf(os.Stderr, "%s first request served; probing\n", time.Now().Format(time.RFC3339Nano))
			return
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "%s no request served within %s (%v); probing anyway\n", time.Now().Format(time.RFC3339Nano), wait, err)
			return
		}
		time.Sleep(interval)
	}
}

func probe(addr string, duration, interval time.Duration, valueSize, ttl int) result {
	var res result
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	var deadline <-chan time.Time
	if duration > 0 {
		deadline = time.After(duration)
	}
	lastOK := time.Now()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return res
		case <-deadline:
			return res
		default:
		}
		key, value, expiry := fmt.Sprintf("live-%d", i%1000), fmt.Sprintf("v%d", i), 0
		if valueSize > 0 {
			key, value, expiry = fmt.Sprintf("fill-%d", i), strings.Repeat("x", valueSize), ttl
		}
		err := setGetExpiring(addr, key, value, expiry)
		res.record(err)
		now := time.Now()
		if err == nil {
			lastOK = now
		} else {
			fmt.Fprintf(os.Stderr, "%s probe %d failed: %v\n", now.Format(time.RFC3339Nano), i, err)
		}
		if gap := now.Sub(lastOK).Seconds(); gap > res.LongestGap {
			res.LongestGap = gap
		}
		time.Sleep(interval)
	}
}

func (r *result) record(err error) {
	r.Requests++
	if err != nil {
		r.Failures++
		if r.FirstError == "" {
			r.FirstError = err.Error()
		}
	}
}

func setGet(addr, key, value string) error { return setGetExpiring(addr, key, value, 0) }

// setGetExpiring stores value under key, to expire after ttl seconds (0: never), and reads it back.
func setGetExpiring(addr, key, value string, ttl int) error {
	return withConn(addr, func(rw *bufio.ReadWriter) error {
		fmt.Fprintf(rw, "set %s 0 %d %d\r\n%s\r\n", key, ttl, len(value), value)
		if err := rw.Flush(); err != nil {
			return err
		}
		line, err := rw.ReadString('\n')
		if err != nil {
			return err
		}
		if strings.TrimSpace(line) != "STORED" {
			return fmt.Errorf("set %s: %q", key, strings.TrimSpace(line))
		}
		return readValue(rw, key, value)
	})
}

func readValue(rw *bufio.ReadWriter, key, want string) error {
	fmt.Fprintf(rw, "get %s\r\n", key)
	if err := rw.Flush(); err != nil {
		return err
	}
	header, err := rw.ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(header) == "END" {
		return fmt.Errorf("get %s: not found", key)
	}
	data, err := rw.ReadString('\n')
	if err != nil {
		return err
	}
	if _, err := rw.ReadString('\n'); err != nil { // END
		return err
	}
	if got := strings.TrimSpace(data); got != want {
		return fmt.Errorf("get %s: %q, want %q", key, got, want)
	}
	return nil
}

func withConn(addr string, f func(*bufio.ReadWriter) error) error {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return err
	}
	return f(bufio.NewReadWriter(bufio.NewReader(conn), bufio.NewWriter(conn)))
}
