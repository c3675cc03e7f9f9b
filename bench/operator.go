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

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// helmController is the name both operators give the Memcached Helm controller.
const helmController = "memcached-controller"

// operatorProcess is a running operator binary and where its metrics are.
type operatorProcess struct {
	cmd     *exec.Cmd
	metrics string
	pprof   string // base URL of /debug/pprof, or "" (the stock helm-operator has none)
}

func startOperator(o options, cp *controlPlane, v variant) (*operatorProcess, error) {
	cmd, p, err := operatorCommand(o, cp, v.base, false)
	if err != nil {
		return nil, err
	}
	if v.gogc != "" {
		cmd.Env = append(cmd.Env, "GOGC="+v.gogc)
	}
	if v.memlimit != "" {
		cmd.Env = append(cmd.Env, "GOMEMLIMIT="+v.memlimit)
	}
	logFile, err := os.Create(filepath.Join(cp.dir, v.base+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	p.cmd = cmd
	if err := p.waitServing(time.Minute); err != nil {
		p.stop()
		return nil, fmt.Errorf("%s: %w (log: %s)", v.base, err, logFile.Name())
	}
	return p, nil
}

// operatorCommand is the command line of an operator variant, on free ports, as the bench runs it
// (leader election only if leaderElect and the process runs as a pod would), and where its
// metrics will be.
func operatorCommand(o options, cp *controlPlane, variant string, leaderElect bool) (*exec.Cmd, *operatorProcess, error) {
	metricsPort, err := freePort()
	if err != nil {
		return nil, nil, err
	}
	probePort, err := freePort()
	if err != nil {
		return nil, nil, err
	}
	common := []string{
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metricsPort),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", probePort),
		fmt.Sprintf("--max-concurrent-reconciles=%d", o.workers),
		"--reconcile-period=1m", fmt.Sprintf("--leader-elect=%t", leaderElect),
		"--watches-file=" + filepath.Join(o.repo, "watches.yaml"),
	}
	var cmd *exec.Cmd
	var pprof string
	switch variant {
	case "stock":
		cmd = exec.Command(filepath.Join(o.binDir, "helm-operator"), append([]string{"run"}, common...)...)
	case "this":
		pprofPort, err := freePort()
		if err != nil {
			return nil, nil, err
		}
		pprof = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", pprofPort)
		cmd = exec.Command(filepath.Join(o.binDir, "manager"), append(common, "--metrics-secure=false",
			fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", pprofPort))...)
	default:
		return nil, nil, fmt.Errorf("unknown operator %q", variant)
	}
	cmd.Dir = o.repo // watches.yaml names the chart relative to it
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.operator)
	return cmd, &operatorProcess{metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort), pprof: pprof}, nil
}

// waitServing waits until the operator serves metrics.
func (p *operatorProcess) waitServing(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		if _, err := p.scrape(); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("serves no metrics after %s", limit)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (p *operatorProcess) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// profileCPU writes a CPU profile of the next d to path (when the operator serves pprof).
func (p *operatorProcess) profileCPU(d time.Duration, path string) error {
	if p.pprof == "" || path == "" {
		return nil
	}
	return download(fmt.Sprintf("%s/profile?seconds=%d", p.pprof, int(d.Seconds())), path)
}

func download(url, path string) error { return downloadWith(http.DefaultClient, url, path) }

func downloadWith(hc *http.Client, url, path string) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// cpu is the process's user+system CPU time.
func (p *operatorProcess) cpu() (time.Duration, error) { return processCPU(p.cmd.Process.Pid) }

// processCPU is the CPU time (user and system) a process has used.
func processCPU(pid int) (time.Duration, error) {
	fields, err := processStat(pid)
	if err != nil {
		return 0, err
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticksPerSecond, nil
}

// processStat is the fields of /proc/<pid>/stat after the command name (which is in parentheses
// and may hold spaces): the state first, then the parent's pid.
func processStat(pid int) ([]string, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	end := strings.LastIndexByte(string(raw), ')')
	if end < 0 || end+2 > len(raw) {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(raw[end+2:]))
	if len(fields) < 13 {
		return nil, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	return fields, nil
}

// profileHeap writes a heap profile to path (when the operator serves pprof).
func (p *operatorProcess) profileHeap(path string) error {
	if p.pprof == "" || path == "" {
		return nil
	}
	return download(p.pprof+"/heap?gc=1", path)
}

// memory is the process's resident set size and its peak, in bytes.
func (p *operatorProcess) memory() (rss, peak int64, err error) {
	return processMemory(p.cmd.Process.Pid)
}

// processMemory is a process's resident set size and its peak, in bytes.
func processMemory(pid int) (rss, peak int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			rss = kb * 1024
		case "VmHWM:":
			peak = kb * 1024
		}
	}
	return rss, peak, sc.Err()
}

// metricsSnapshot holds the Helm controller's reconcile counts and latency histogram.
type metricsSnapshot struct {
	buckets map[float64]float64 // upper bound -> cumulative count
	// results counts reconciles by result (success, error, requeue_after, ...); queued is the
	// time its requests waited in the controller's queue, in seconds, of queuedCount requests.
	results             map[string]float64
	queued, queuedCount float64
}

// reconciles is the Helm controller's reconcile count, whatever their results.
func (s metricsSnapshot) reconciles() float64 {
	var n float64
	for _, c := range s.results {
		n += c
	}
	return n
}

func (p *operatorProcess) scrape() (metricsSnapshot, error) {
	resp, err := http.Get(p.metrics)
	if err != nil {
		return metricsSnapshot{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return metricsSnapshot{}, fmt.Errorf("GET %s: %s", p.metrics, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return metricsSnapshot{}, err
	}
	snap := metricsSnapshot{buckets: map[float64]float64{}, results: map[string]float64{}}
	for _, m := range families["controller_runtime_reconcile_total"].GetMetric() {
		if label(m, "controller") == helmController {
			snap.results[label(m, "result")] += m.GetCounter().GetValue()
		}
	}
	for _, m := range families["workqueue_queue_duration_seconds"].GetMetric() {
		if label(m, "name") == helmController {
			snap.queued += m.GetHistogram().GetSampleSum()
			snap.queuedCount += float64(m.GetHistogram().GetSampleCount())
		}
	}
	for _, m := range families["controller_runtime_reconcile_time_seconds"].GetMetric() {
		if label(m, "controller") != helmController {
			continue
		}
		for _, b := range m.GetHistogram().GetBucket() {
			snap.buckets[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
	}
	return snap, nil
}

// reconcilesSince says how the Helm controller's reconciles since before ended, and how long
// its requests waited in its queue on average: where an install's time went besides its work.
func (after metricsSnapshot) reconcilesSince(before metricsSnapshot) string {
	var parts []string
	for _, result := range slices.Sorted(maps.Keys(after.results)) {
		if d := after.results[result] - before.results[result]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", result, d))
		}
	}
	wait := "–"
	if n := after.queuedCount - before.queuedCount; n > 0 {
		wait = (time.Duration((after.queued - before.queued) / n * float64(time.Second))).Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%s; mean wait in the queue %s", strings.Join(parts, ", "), wait)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// quantile estimates a latency quantile from the histogram counts between two snapshots, by
// linear interpolation inside the bucket (as Prometheus' histogram_quantile does).
func quantile(q float64, before, after metricsSnapshot) time.Duration {
	var bounds []float64
	for b := range after.buckets {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 {
		return 0
	}
	total := after.buckets[bounds[len(bounds)-1]] - before.buckets[bounds[len(bounds)-1]]
	if total <= 0 {
		return 0
	}
	rank, prevBound, prevCount := q*total, 0.0, 0.0
	for _, b := range bounds {
		count := after.buckets[b] - before.buckets[b]
		if count >= rank {
			if math.IsInf(b, 1) {
				return time.Duration(prevBound * float64(time.Second))
			}
			frac := 0.0
			if count > prevCount {
				frac = (rank - prevCount) / (count - prevCount)
			}
			return time.Duration((prevBound + (b-prevBound)*frac) * float64(time.Second))
		}
		prevBound, prevCount = b, count
	}
	return time.Duration(prevBound * float64(time.Second))
}
