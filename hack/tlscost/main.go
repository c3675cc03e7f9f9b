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

// Command tlscost measures what spec.tls costs on memcached's data path (`make bench-tls`): gets and
// sets per second and their latency through one memcached started with the chart's flags, in plain
// text and with the TLS options the chart renders (mutual TLS, the Intermediate profile, the
// certificates internal/certs makes as the operator does), with the same client (gomemcache, as
// tests/e2e/memcache-client uses it), both with connections kept open (an application's pool) and
// with a new connection per request (the handshake each time). memcached runs on this machine's
// loopback, so the figures are memcached's and TLS's own, without a network. It writes
// bench/results/tls-cost.md.
package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/example/memcached-operator/internal/certs"
	"github.com/example/memcached-operator/internal/tlsprofile"
)

// run is one measurement: plain text or TLS, pooled connections or one per request.
type run struct {
	tls, pooled bool
}

type result struct {
	run
	ops, failures int
	duration      time.Duration
	latencies     []time.Duration
}

func main() {
	out := flag.String("out", "bench/results", "folder of tls-cost.md")
	duration := flag.Duration("duration", 10*time.Second, "how long each run lasts")
	clients := flag.Int("clients", 8, "clients at once")
	keys := flag.Int("keys", 10000, "keys the clients read and write")
	valueSize := flag.Int("value-size", 1000, "bytes per value")
	reps := flag.Int("reps", 3, "runs of each kind, in turn: the table gives the median one")
	flag.Parse()

	dir, err := os.MkdirTemp("", "tlscost")
	check(err)
	check(os.Chmod(dir, 0o755)) // memcached runs as nobody
	defer func() { _ = os.RemoveAll(dir) }()
	serverName := "tlscost-0.tlscost-memcached-headless.bench.svc"
	clientCfg, tlsArgs, err := certificates(dir, serverName)
	check(err)

	kinds := []run{{false, true}, {true, true}, {false, false}, {true, false}}
	all := make([][]result, len(kinds))
	for range *reps {
		for i, r := range kinds { // in turn, so that a slow moment of the machine falls on every kind
			addr := "127.0.0.1:23411"
			args := []string{"-l", "127.0.0.1", "-p", "23411", "-U", "0", "-m", "64", "-c", "1024", "-t", "4", "-I", "1m"}
			var cfg *tls.Config
			if r.tls {
				args, cfg = append(args, tlsArgs...), clientCfg
			}
			stop, err := startMemcached(args, addr)
			check(err)
			res := measure(r, addr, cfg, *clients, *keys, *valueSize, *duration)
			stop()
			fmt.Fprintf(os.Stderr, "%s: %.0f requests/s, p99 %s, %d failures\n", name(r), rate(res), percentile(res.latencies, 99), res.failures)
			all[i] = append(all[i], res)
		}
	}
	var results []result
	for _, runs := range all {
		slices.SortFunc(runs, func(a, b result) int { return cmp.Compare(rate(a), rate(b)) })
		results = append(results, runs[len(runs)/2])
	}
	check(os.WriteFile(filepath.Join(*out, "tls-cost.md"), []byte(report(results, *clients, *reps, *keys, *valueSize, *duration)), 0o644))
}

// certificates makes a CA, a server and a client certificate as the operator does, and returns
// the client's TLS configuration and memcached's TLS flags as the chart renders them.
func certificates(dir, serverName string) (*tls.Config, []string, error) {
	now := time.Now()
	ca, err := certs.NewCA("tlscost CA", now, time.Hour)
	if err != nil {
		return nil, nil, err
	}
	domain := strings.SplitN(serverName, ".", 2)[1]
	srv, err := certs.Sign(ca, certs.Leaf{CommonName: "tlscost", Server: true, DNSNames: []string{"*." + domain, domain}}, now, time.Hour)
	if err != nil {
		return nil, nil, err
	}
	cl, err := certs.Sign(ca, certs.Leaf{CommonName: "tlscost client"}, now, time.Hour)
	if err != nil {
		return nil, nil, err
	}
	for name, data := range map[string][]byte{"ca.crt": ca.Cert, "tls.crt": srv.Cert, "tls.key": srv.Key} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return nil, nil, err
		}
	}
	profile, err := tlsprofile.Named("Intermediate")
	if err != nil {
		return nil, nil, err
	}
	opts := fmt.Sprintf("ssl_chain_cert=%[1]s/tls.crt,ssl_key=%[1]s/tls.key,ssl_ca_cert=%[1]s/ca.crt,ssl_verify_mode=2,ssl_min_version=2,ssl_ciphers=%s",
		dir, strings.Join(profile.OpenSSLCiphers, ":"))
	pair, err := tls.X509KeyPair(cl.Cert, cl.Key)
	if err != nil {
		return nil, nil, err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.Cert)
	return &tls.Config{RootCAs: roots, ServerName: serverName, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		[]string{"-Z", "-o", opts}, nil
}

// startMemcached runs memcached (as nobody when root) until stop, once it accepts.
func startMemcached(args []string, addr string) (stop func(), err error) {
	if os.Geteuid() == 0 {
		args = append(args, "-u", "nobody")
	}
	cmd := exec.Command("memcached", args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("memcached (apt-get install memcached): %w", err)
	}
	stop = func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			_ = c.Close()
			return stop, nil
		}
	}
	stop()
	return nil, errors.New("memcached did not listen within 10 s")
}

// measure runs clients that each, until duration is over, set or get (one in ten a set) a random
// key of keys, after the keys were stored once.
func measure(r run, addr string, cfg *tls.Config, clients, keys, valueSize int, duration time.Duration) result {
	value := make([]byte, valueSize)
	newClient := func() *memcache.Client {
		mc := memcache.New(addr)
		mc.Timeout = 2 * time.Second
		mc.MaxIdleConns = clients
		if cfg != nil {
			mc.DialContext = (&tls.Dialer{NetDialer: &net.Dialer{Timeout: 2 * time.Second}, Config: cfg}).DialContext
		}
		return mc
	}
	fill := newClient()
	for i := range keys {
		check(fill.Set(&memcache.Item{Key: fmt.Sprintf("k%d", i), Value: value}))
	}
	res := result{run: r}
	var mu sync.Mutex
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	start := time.Now()
	shared := newClient()
	for c := range clients {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(c), 2026))
			var lat []time.Duration
			ops, failures := 0, 0
			for ctx.Err() == nil {
				mc := shared
				if !r.pooled {
					mc = newClient()
				}
				key := fmt.Sprintf("k%d", rnd.IntN(keys))
				t := time.Now()
				var err error
				if rnd.IntN(10) == 0 {
					err = mc.Set(&memcache.Item{Key: key, Value: value})
				} else {
					_, err = mc.Get(key)
				}
				lat = append(lat, time.Since(t))
				if !r.pooled {
					_ = mc.Close()
				}
				ops++
				if err != nil {
					failures++
				}
			}
			mu.Lock()
			res.ops += ops
			res.failures += failures
			res.latencies = append(res.latencies, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	res.duration = time.Since(start)
	return res
}

func rate(r result) float64 { return float64(r.ops) / r.duration.Seconds() }

func name(r run) string {
	mode := "plain text"
	if r.tls {
		mode = "TLS, client certificate"
	}
	conns := "connections kept open"
	if !r.pooled {
		conns = "a connection per request"
	}
	return mode + ", " + conns
}

func percentile(lat []time.Duration, p int) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func report(results []result, clients, reps, keys, valueSize int, duration time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# What TLS costs on memcached's data path\n\n")
	fmt.Fprintf(&b, "`make bench-tls` (hack/tlscost), %s: one memcached (Debian's, with the chart's flags `-m 64 -c 1024 -t 4 -I 1m`) on this machine's loopback, "+
		"in plain text and with the TLS options the chart renders for `spec.tls` (mutual TLS, the Intermediate profile, the operator's ECDSA P-256 certificates); "+
		"%d clients at once (gomemcache), each for %s (the median of %d runs of each kind, in turn) getting (9 in 10) or setting a random one of %d keys of %d bytes. "+
		"No network: the figures are memcached's and TLS's own.\n\n", time.Now().UTC().Format("2006-01-02"), clients, duration, reps, keys, valueSize)
	b.WriteString("| run | requests/s | p50 | p99 | failed | requests/s of plain text |\n|---|---:|---:|---:|---:|---:|\n")
	plain := map[bool]float64{}
	for _, r := range results {
		if !r.tls {
			plain[r.pooled] = rate(r)
		}
	}
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %d | %.2f |\n", name(r.run), rate(r),
			percentile(r.latencies, 50).Round(time.Microsecond), percentile(r.latencies, 99).Round(time.Microsecond), r.failures, rate(r)/plain[r.pooled])
	}
	b.WriteString("\nWith connections kept open, as applications' clients keep them, TLS costs the encryption of each request; " +
		"with a connection per request it costs a handshake each time (ECDHE and ECDSA signatures on both sides, mutual TLS), which is why clients of a TLS cache should pool connections.\n")
	return b.String()
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "tlscost:", err)
		os.Exit(1)
	}
}
