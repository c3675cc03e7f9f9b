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

// Command bench measures this operator side by side with the stock helm-operator (built from the
// helm-operator-plugins module, same chart and CRD) and with the raw-create limit (a plain client
// creating the same rendered objects plus a release-sized Secret), on a control plane of the
// project's own binaries (etcd, kube-apiserver with an audit log, kube-controller-manager; no
// kubelet). For every N and repetition, each on a fresh control plane:
//   - time until every Memcached reports Deployed, reconcile latency p50/p99 and the operator's
//     CPU seconds while converging; the control plane's CPU and the operator's API requests by
//     verb (from the audit log) until settled: every StatefulSet's pod made;
//   - then idle: CPU, API requests and writes per periodic reconcile, RSS and peak RSS.
//
// It writes results/results.md (min/median/max over repetitions, and ratios paired within a
// repetition) and results/results.png. `make bench` builds what it needs and runs it.
//
// `bench chaos` (`make chaos`) runs fault scenarios on the same control plane instead (chaos.go)
// and writes results/chaos.md; `bench warm` (`make bench-warm`, also part of `make bench`) measures
// memcached's warm restart (warm.go) into results/warm-restart.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

type options struct {
	repo, binDir, kubeBin, helm, out string
	kubeVersion                      string
	sizes                            []int
	reps, workers                    int
	idle, convergeProfile            time.Duration
	variants                         []string
	// once are larger sizes, measured once per variant.
	once []int
	// large are still larger sizes, measured once for each of largeVariants.
	large         []int
	largeVariants []string
	// extras are variants of this operator measured once at extraN (foreign objects, GC settings).
	extras  []string
	extraN  int
	foreign foreignObjects
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "chaos" {
		chaosMain(os.Args[2:])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "warm" {
		warmMain(os.Args[2:])
		return
	}
	var o options
	var sizes, variants string
	flag.StringVar(&o.repo, "repo", "..", "the operator's repository (CRDs, chart, watches.yaml)")
	flag.StringVar(&o.binDir, "bin-dir", "../bin/bench", "folder of the manager and helm-operator binaries")
	flag.StringVar(&o.kubeBin, "kube-bin", "", "folder of etcd, kube-apiserver and kube-controller-manager")
	flag.StringVar(&o.kubeVersion, "kube-version", "", "the Kubernetes version of -kube-bin (the chart is rendered for it)")
	flag.StringVar(&o.helm, "helm", "../bin/helm", "the helm binary (renders the chart for the raw-create limit)")
	flag.StringVar(&o.out, "out", "results", "folder for results.md and results.png")
	flag.StringVar(&versions, "versions", "", "the versions measured, for the report")
	flag.StringVar(&sizes, "n", "100,300,1000", "numbers of Memcached CRs")
	flag.IntVar(&o.reps, "reps", 3, "repetitions of each measurement")
	flag.IntVar(&o.workers, "workers", 8, "reconcile workers of both operators")
	flag.DurationVar(&o.idle, "idle", 75*time.Second, "idle window (longer than the 1m reconcile period)")
	flag.DurationVar(&o.convergeProfile, "converge-profile", 10*time.Second, "CPU profile window from the first create (shorter than the idle settling of 12s)")
	flag.StringVar(&variants, "variants", "raw,stock,this", "what to measure: raw (create limit), stock (helm-operator), this (this operator)")
	var once, large, largeVariants, extras string
	flag.StringVar(&once, "once", "3000", "larger numbers of Memcached CRs, measured once per variant (\"\": none)")
	flag.StringVar(&large, "large", "10000", "still larger numbers of Memcached CRs, measured once for -large-variants (\"\": none)")
	flag.StringVar(&largeVariants, "large-variants", "raw,this", "the variants measured at -large")
	flag.StringVar(&extras, "extras", "this+foreign,this+gogc=50,this+gogc=25,this+memlimit=128MiB", "variants of this operator measured once at -extra-n: +foreign among others' objects, +gogc=X with GOGC=X, +memlimit=X with GOMEMLIMIT=X (\"\": none)")
	flag.IntVar(&o.extraN, "extra-n", 1000, "the number of Memcached CRs of the -extras")
	flag.IntVar(&o.foreign.releases, "foreign-releases", 500, "Helm releases of others in the namespace (+foreign)")
	flag.IntVar(&o.foreign.releaseKB, "foreign-release-kb", 200, "the size of each foreign release's record")
	flag.IntVar(&o.foreign.deployments, "foreign-deployments", 2000, "Deployments of others in the namespace (+foreign)")
	flag.Parse()
	o.sizes, o.once, o.large = numbers("-n", sizes), numbers("-once", once), numbers("-large", large)
	for _, n := range append(slices.Clone(o.once), o.large...) {
		if slices.Contains(o.sizes, n) || slices.Contains(o.once, n) && slices.Contains(o.large, n) {
			fail(fmt.Errorf("-once, -large: N=%d is measured twice (in -n, -once or -large)", n))
		}
	}
	o.largeVariants = strings.Split(largeVariants, ",")
	o.variants = strings.Split(variants, ",")
	if extras != "" {
		o.extras = strings.Split(extras, ",")
	}
	for _, v := range slices.Concat(o.variants, o.extras, o.largeVariants) {
		if _, err := parseVariant(v); err != nil {
			fail(err)
		}
	}
	if o.kubeBin == "" || o.kubeVersion == "" {
		fail(fmt.Errorf("-kube-bin and -kube-version are required"))
	}

	logSilently()
	ctx, stop := signalContext()
	defer stop()
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		fail(err)
	}
	committed := committedReport(o.repo)
	results, runErr := run(ctx, o)
	if runErr != nil && len(results) == 0 {
		fail(runErr)
	}
	md := report(o, machine(), results)
	if notes := keptNotes(committed); notes != "" {
		md += "\n" + notes
	}
	if runErr != nil {
		// What was measured before is kept: a run of hours that fails late loses nothing.
		md = strings.Replace(md, "\n\n", fmt.Sprintf("\n\n**This run stopped early** (%v): the tables hold the %d measurements made before.\n\n", runErr, len(results)), 1)
	}
	if err := os.WriteFile(filepath.Join(o.out, "results.md"), []byte(md), 0o644); err != nil {
		fail(err)
	}
	if err := chart(filepath.Join(o.out, "results.png"), o, results); err != nil {
		fail(errors.Join(runErr, err))
	}
	if runErr != nil {
		fail(runErr)
	}
	fmt.Print(md)
	verdict, grew := guard(committed, results)
	fmt.Println("\n" + verdict)
	if grew {
		os.Exit(1)
	}
}

// committedReport is bench/results/results.md as the repository's last commit holds it (the
// file itself if git cannot say): the figures the guard compares with.
func committedReport(repo string) string {
	out, err := exec.Command("git", "-C", repo, "show", "HEAD:bench/results/results.md").Output()
	if err == nil {
		return string(out)
	}
	raw, _ := os.ReadFile(filepath.Join(repo, "bench", "results", "results.md"))
	return string(raw)
}

// result is one measurement of one variant at one N in one repetition.
type result struct {
	variant string
	n, rep  int
	// converge is the time from the first create until every CR reports Deployed (raw: until
	// every object is created).
	converge time.Duration
	p50, p99 time.Duration // reconcile latency while converging
	// requests by verb from the first create until settled (controlPlane.settle), and per idle
	// reconcile.
	convergeRequests map[string]int
	idleRequests     map[string]float64
	idleReconciles   float64
	convergeCPU      time.Duration
	// controlPlaneRSS is etcd's, kube-apiserver's and kube-controller-manager's resident memory
	// at idle (raw: once created).
	controlPlaneRSS int64
	// controlPlaneCPU is what etcd, kube-apiserver and kube-controller-manager used from the
	// first create until settled (controlPlane.settle): the work each install cost them.
	controlPlaneCPU time.Duration
	kcmCPU          time.Duration // of it, kube-controller-manager's
	idleCPUPerRecon time.Duration
	rss, peakRSS    int64 // bytes, at idle
	// recordBytes is the size of the Memcacheds' release records (every revision) per CR, once
	// converged: what each install wrote to etcd beside the objects (raw: its model of one).
	recordBytes float64
	// trace is where an install's time went, from the audit log (operators only).
	trace installTrace
}

// numbers parses a comma-separated list of positive numbers ("": none).
func numbers(flagName, list string) []int {
	var out []int
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			fail(fmt.Errorf("%s: %q is not a positive number", flagName, s))
		}
		out = append(out, n)
	}
	return out
}

// run measures every variant at every size, o.reps times (on an error it returns what it measured
// before with it); then every variant once at each of
// o.once, and each of o.largeVariants once at each of o.large; then each of o.extras once at
// o.extraN.
func run(ctx context.Context, o options) ([]result, error) {
	type job struct {
		variant string
		n, rep  int
	}
	var jobs []job
	for rep := 1; rep <= o.reps; rep++ {
		for _, n := range o.sizes {
			for _, v := range o.variants {
				jobs = append(jobs, job{v, n, rep})
			}
		}
	}
	for _, n := range o.once {
		for _, v := range o.variants {
			jobs = append(jobs, job{v, n, 1})
		}
	}
	for _, n := range o.large {
		for _, v := range o.largeVariants {
			jobs = append(jobs, job{v, n, 1})
		}
	}
	for _, v := range o.extras {
		jobs = append(jobs, job{v, o.extraN, 1})
	}
	var results []result
	for _, j := range jobs {
		if err := ctx.Err(); err != nil {
			return results, err
		}
		progress("repetition %d, N=%d, %s", j.rep, j.n, j.variant)
		r, err := measure(ctx, o, j.variant, j.n)
		if err != nil {
			return results, fmt.Errorf("%s, N=%d, repetition %d: %w", j.variant, j.n, j.rep, err)
		}
		r.rep = j.rep
		progress("  converged in %s", r.converge.Round(time.Millisecond))
		results = append(results, r)
	}
	return results, nil
}

// logSilently discards controller-runtime's logs: envtest logs through it, and the bench prints
// its own progress.
func logSilently() { logf.SetLogger(logr.Discard()) }

// signalContext is cancelled on SIGINT or SIGTERM, so that what was started is stopped.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
