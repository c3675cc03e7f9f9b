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

// Command memcache-client uses a Memcached as an application does: a sharding client library
// (github.com/bradfitz/gomemcache) hashes each key to one server of the list, with rendezvous
// hashing, a consistent hash: a server added or removed moves only its share of the keys.
//
//	memcache-client -servers a:11211,b:11211 -op store -keys 10000    store keys (value = key's value)
//	memcache-client -servers ... -op read -keys 10000                 read them: hits, misses, wrong
//	memcache-client -servers ... -op delete -keys 100                 delete keys, then read each from
//	                                                                  every server: a copy left is stale
//	memcache-client -servers ... -op watch -keys 3000 -duration 3m    every second read every key (a
//	                                                                  miss is stored again), per server,
//	                                                                  until duration or -op stop
//	memcache-client -op stop                                          (kubectl exec into a watch's pod)
//	                                                                  end the watch at its next pass
//	                                                                  that hits every key
//	memcache-client -srv _memcache._tcp.svc.ns.svc -op servers        the servers SRV lists
//	memcache-client -srv ... -op check -keys 1000                      store keys, read them back, say so
//	memcache-client -servers ... -op stats                            each server's own figures (its
//	                                                                  item memory, use, uptime)
//
// -servers may be replaced by -srv: the list is then what SRV lists, sorted. Names are resolved
// again before each pass, as clients that follow a server list do. It prints JSON.
//
// With -tls-dir (a mounted <servers>-client-tls Secret: ca.crt, tls.crt, tls.key) every
// connection is TLS, verified against ca.crt for -tls-server-name, presenting the client
// certificate read again at each handshake (-tls-no-cert: none).
package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

func main() {
	servers := flag.String("servers", "", "comma-separated host:port list (a Memcached's status.servers)")
	srv := flag.String("srv", "", "SRV name that lists the servers, instead of -servers")
	op := flag.String("op", "read", "store, read, check, delete, watch, stop, servers or stats")
	keys := flag.Int("keys", 1000, "how many keys (key-0 ... key-<n-1>)")
	prefix := flag.String("prefix", "key", "key prefix")
	generation := flag.Int("generation", 0, "store and read the values of this generation: an application's update of every key (0: value-<i>, n: value-<i>-g<n>)")
	duration := flag.Duration("duration", time.Minute, "watch: how long at most (-op stop ends it sooner)")
	interval := flag.Duration("interval", time.Second, "watch: pause between passes")
	tlsDir := flag.String("tls-dir", "", "speak TLS with the CA and client certificate of this directory (ca.crt, tls.crt, tls.key)")
	tlsServerName := flag.String("tls-server-name", "", "the name the servers' certificate must hold (the addresses resolve to IPs)")
	tlsNoCert := flag.Bool("tls-no-cert", false, "with -tls-dir, present no client certificate")
	waitReachable := flag.Duration("wait-reachable", 30*time.Second, "first wait up to this long until every server takes a connection, as applications "+
		"retry (a NetworkPolicy agent allows a new pod's address a moment after the pod starts); 0: at once, for clients meant to be refused")
	flag.Parse()
	if *tlsDir != "" {
		cfg, err := clientTLS(*tlsDir, *tlsServerName, !*tlsNoCert)
		if err != nil {
			fail(err)
		}
		dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 2 * time.Second}, Config: cfg}
		dial = dialer.DialContext
	}

	if *op == "stop" {
		// The watch is this container's first process: a test that has seen what it waited for
		// (a rollout done) ends the watch once every key hits again, instead of waiting out its
		// duration.
		if err := syscall.Kill(1, syscall.SIGUSR1); err != nil {
			fail(fmt.Errorf("stopping the watch: %w", err))
		}
		return
	}

	list := func() ([]string, error) {
		if *srv != "" {
			return lookupSRV(*srv)
		}
		if *servers == "" {
			return nil, errors.New("-servers or -srv is required")
		}
		return strings.Split(*servers, ","), nil
	}
	addrs, err := list()
	if err != nil {
		fail(err)
	}
	if *waitReachable > 0 {
		awaitReachable(addrs, *waitReachable)
	}
	ring := &rendezvous{}
	if err := ring.set(addrs); err != nil {
		fail(err)
	}
	mc := memcache.NewFromSelector(ring)
	mc.Timeout = 2 * time.Second
	mc.DialContext = dial
	key := func(i int) string { return fmt.Sprintf("%s-%d", *prefix, i) }
	value := func(i int) []byte {
		if *generation > 0 {
			return fmt.Appendf(nil, "value-%d-g%d", i, *generation)
		}
		return fmt.Appendf(nil, "value-%d", i)
	}

	var out any
	switch *op {
	case "servers":
		out = map[string]any{"servers": addrs}
	case "store":
		r := counts{}
		for i := range *keys {
			r.add(ring.name(key(i)), mc.Set(&memcache.Item{Key: key(i), Value: value(i)}), true)
		}
		out = r
	case "read":
		r := counts{}
		for i := range *keys {
			r.read(ring.name(key(i)), mc, key(i), value(i))
		}
		out = r
	case "check":
		stored, read := counts{}, counts{}
		for i := range *keys {
			stored.add(ring.name(key(i)), mc.Set(&memcache.Item{Key: key(i), Value: value(i)}), true)
		}
		for i := range *keys {
			_ = read.read(ring.name(key(i)), mc, key(i), value(i))
		}
		fmt.Printf("%d servers: %s\nstored %d keys (%d failed), read back %d of them (%d misses, %d failures)\n",
			len(addrs), strings.Join(addrs, ", "), stored.Hits, stored.Failures, read.Hits, read.Misses, read.Failures)
		out = map[string]any{"servers": addrs, "stored": stored, "read": read}
	case "delete":
		out = deleteAndCheck(mc, addrs, *keys, key)
	case "watch":
		out = watch(mc, ring, list, *keys, *duration, *interval, key, value)
	case "stats":
		all := map[string]map[string]string{}
		for _, a := range addrs {
			st, err := serverStats(a)
			if err != nil {
				fail(fmt.Errorf("stats of %s: %w", a, err))
			}
			all[a] = st
		}
		out = all
	default:
		fail(fmt.Errorf("unknown -op %s", *op))
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(2)
}

// counts are the outcomes of requests, in all and per server.
type counts struct {
	Requests int `json:"requests"`
	Hits     int `json:"hits"`
	Misses   int `json:"misses"`
	Wrong    int `json:"wrong"` // a value that is not the key's
	Failures int `json:"failures"`
	// PerServer counts the misses and failures of each server (by its name in the list).
	PerServer  map[string]int `json:"perServer,omitempty"`
	FirstError string         `json:"firstError,omitempty"`
}

func (c *counts) add(server string, err error, stored bool) {
	c.Requests++
	switch {
	case err == nil && stored:
		c.Hits++
	case errors.Is(err, memcache.ErrCacheMiss):
		c.Misses++
		c.bad(server)
	case err != nil:
		c.Failures++
		c.bad(server)
		if c.FirstError == "" {
			c.FirstError = err.Error()
		}
	}
}

func (c *counts) bad(server string) {
	if c.PerServer == nil {
		c.PerServer = map[string]int{}
	}
	c.PerServer[server]++
}

// read gets one key and counts a hit, a miss, a wrong value or a failure.
func (c *counts) read(server string, mc *memcache.Client, key string, want []byte) error {
	it, err := mc.Get(key)
	if err == nil && string(it.Value) != string(want) {
		c.Requests++
		c.Wrong++
		c.bad(server)
		return nil
	}
	c.add(server, err, true)
	return err
}

// deleteAndCheck deletes n keys through the client, then asks every server for each: a value
// still served anywhere is stale.
func deleteAndCheck(mc *memcache.Client, addrs []string, n int, key func(int) string) map[string]int {
	out := map[string]int{"deleted": 0, "stale": 0, "failures": 0}
	for i := range n {
		if err := mc.Delete(key(i)); err != nil && !errors.Is(err, memcache.ErrCacheMiss) {
			out["failures"]++
			continue
		}
		out["deleted"]++
	}
	for _, addr := range addrs {
		one := memcache.New(addr)
		one.DialContext = dial
		one.Timeout = 2 * time.Second
		for i := range n {
			if _, err := one.Get(key(i)); err == nil {
				out["stale"]++
			} else if !errors.Is(err, memcache.ErrCacheMiss) {
				out["failures"]++
			}
		}
	}
	return out
}

// errServerDown is the failure of a key whose server failed earlier in the same pass.
var errServerDown = errors.New("server down in this pass")

// pass is one watch pass over every key.
type pass struct {
	At time.Time `json:"at"`
	counts
}

// watch reads every key once a pass, every interval, for duration or, after -op stop, until a
// pass hits every key; a key missed is stored again
// (cache-aside, as an application does), so a restarted server warms up. Names are resolved
// again before each pass. A server that fails a request is taken as down for the rest of the
// pass, as memcached clients mark a dead server (pymemcache's dead_timeout, Mimir's circuit
// breaker): its keys count as failures without a request each, so that a server being replaced
// (its old address unreachable until its name resolves to the new pod) costs one timeout a pass,
// not one per key.
func watch(mc *memcache.Client, ring *rendezvous, list func() ([]string, error), n int, duration, interval time.Duration,
	key func(int) string, value func(int) []byte) map[string]any {
	var passes []pass
	warm, stopping := false, false
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGUSR1) // -op stop
	end := time.After(duration)
	for {
		if addrs, err := list(); err == nil {
			_ = ring.set(addrs) // a name that does not resolve keeps its place; its keys fail
		}
		p := pass{At: time.Now().UTC()}
		down := map[string]bool{}
		for i := range n {
			server := ring.name(key(i))
			if down[server] {
				p.add(server, errServerDown, false)
				continue
			}
			switch err := p.read(server, mc, key(i), value(i)); {
			case errors.Is(err, memcache.ErrCacheMiss):
				_ = mc.Set(&memcache.Item{Key: key(i), Value: value(i)})
			case err != nil:
				down[server] = true
			}
		}
		passes = append(passes, p)
		if p.Requests > 0 && p.Hits == p.Requests && !warm {
			warm = true // what a test waits for before it changes the servers
			fmt.Fprintln(os.Stderr, "watch: a pass hit every key")
		}
		if stopping && p.Hits == p.Requests {
			return map[string]any{"passes": passes}
		}
		select {
		case <-stop:
			stopping = true
		case <-end:
			return map[string]any{"passes": passes}
		case <-time.After(interval):
		}
	}
}

// rendezvous is a gomemcache ServerSelector with rendezvous (highest random weight) hashing: a
// key goes to the server whose hash with the key is highest, so a server added takes 1/(n+1) of
// the keys and a server removed gives away only its own. Servers are kept by their names (the
// hash's input), each resolved to an address.
type rendezvous struct {
	mu    sync.RWMutex
	names []string
	addrs map[string]net.Addr
}

func (r *rendezvous) set(names []string) error {
	addrs := map[string]net.Addr{}
	for _, n := range names {
		a, err := net.ResolveTCPAddr("tcp", n)
		if err != nil {
			a = nil // not resolvable now (a server restarting): its keys fail until it is back
		}
		if a != nil {
			addrs[n] = a
		} else {
			addrs[n] = unresolved(n)
		}
	}
	r.mu.Lock()
	r.names, r.addrs = slices.Clone(names), addrs
	r.mu.Unlock()
	return nil
}

// name is the server a key hashes to.
func (r *rendezvous) name(key string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	best, bestWeight := "", uint64(0)
	for _, n := range r.names {
		h := sha256.Sum256([]byte(n + "\x00" + key))
		if w := binary.BigEndian.Uint64(h[:8]); best == "" || w > bestWeight {
			best, bestWeight = n, w
		}
	}
	return best
}

func (r *rendezvous) PickServer(key string) (net.Addr, error) {
	name := r.name(key)
	if name == "" {
		return nil, memcache.ErrNoServers
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.addrs[name], nil
}

func (r *rendezvous) Each(f func(net.Addr) error) error {
	r.mu.RLock()
	addrs := make([]net.Addr, 0, len(r.addrs))
	for _, a := range r.addrs {
		addrs = append(addrs, a)
	}
	r.mu.RUnlock()
	for _, a := range addrs {
		if err := f(a); err != nil {
			return err
		}
	}
	return nil
}

// awaitReachable returns once every server of addrs took a connection, or once d has passed (the
// operation then counts what fails).
func awaitReachable(addrs []string, d time.Duration) {
	deadline := time.Now().Add(d)
	for _, a := range addrs {
		for time.Now().Before(deadline) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			conn, err := dial(ctx, "tcp", a)
			cancel()
			if err == nil {
				_ = conn.Close()
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// dial connects to a server: plain TCP, or TLS with -tls-dir.
var dial = (&net.Dialer{Timeout: 2 * time.Second}).DialContext

// clientTLS is the TLS configuration of a mounted client Secret.
func clientTLS(dir, serverName string, withCert bool) (*tls.Config, error) {
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no CA certificate in ca.crt")
	}
	cfg := &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12}
	if withCert {
		// Read at each handshake: the operator renews it, and the kubelet updates the files.
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
			return &c, err
		}
	}
	return cfg, nil
}

// unresolved is the address of a server whose name does not resolve: connecting to it fails.
type unresolved string

func (u unresolved) Network() string { return "tcp" }
func (u unresolved) String() string  { return string(u) }

// lookupSRV returns the targets SRV lists for name as host:port, sorted.
func lookupSRV(name string) ([]string, error) {
	_, records, err := net.LookupSRV("", "", name)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range records {
		out = append(out, fmt.Sprintf("%s:%d", strings.TrimSuffix(r.Target, "."), r.Port))
	}
	slices.Sort(out)
	return out, nil
}

// serverStats asks one server for its `stats` and returns the figures a test reads: its item
// memory (limit_maxbytes), what it stores (bytes, curr_items), evictions, and since when it runs
// (uptime, pid).
func serverStats(addr string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return nil, err
	}
	if _, err := conn.Write([]byte("stats\r\n")); err != nil {
		return nil, err
	}
	wanted := map[string]bool{"limit_maxbytes": true, "bytes": true, "curr_items": true, "evictions": true, "uptime": true, "pid": true}
	out := map[string]string{}
	var reply []byte
	buf := make([]byte, 4096)
	for !strings.HasSuffix(string(reply), "END\r\n") {
		n, err := conn.Read(buf)
		if err != nil {
			return nil, err
		}
		reply = append(reply, buf[:n]...)
	}
	for _, line := range strings.Split(string(reply), "\r\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "STAT" && wanted[f[1]] {
			out[f[1]] = f[2]
		}
	}
	return out, nil
}
