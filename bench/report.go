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
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
)

// stats is min, median and max over repetitions, of n values.
type stats struct {
	min, med, max float64
	n             int
}

func summarize(xs []float64) stats {
	if len(xs) == 0 {
		return stats{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stats{s[0], med, s[len(s)-1], len(s)}
}

// format is "–" for what was not measured.
func (s stats) format(unit string, decimals int) string {
	if s.n == 0 {
		return "–"
	}
	f := fmt.Sprintf("%%.%df", decimals)
	if s.min == s.max {
		return fmt.Sprintf(f+"%s", s.med, unit)
	}
	return fmt.Sprintf(f+"%s ("+f+"–"+f+")", s.med, unit, s.min, s.max)
}

// pick collects one number per repetition of a variant at N.
func pick(results []result, variant string, n int, f func(result) float64) []float64 {
	var xs []float64
	for _, r := range results {
		if r.variant == variant && r.n == n {
			xs = append(xs, f(r))
		}
	}
	return xs
}

// ratio collects a/b per repetition, pairing the two variants' measurements of the same
// repetition.
func ratio(results []result, a, b string, n int, f func(result) float64) []float64 {
	byRep := map[int]map[string]float64{}
	for _, r := range results {
		if r.n == n && (r.variant == a || r.variant == b) {
			if byRep[r.rep] == nil {
				byRep[r.rep] = map[string]float64{}
			}
			byRep[r.rep][r.variant] = f(r)
		}
	}
	var xs []float64
	for _, m := range byRep {
		va, okA := m[a]
		vb, okB := m[b]
		if okA && okB && vb != 0 {
			xs = append(xs, va/vb)
		}
	}
	return xs
}

func seconds(r result) float64         { return r.converge.Seconds() }
func operatorCPU(r result) float64     { return r.convergeCPU.Seconds() }
func controlPlaneCPU(r result) float64 { return r.controlPlaneCPU.Seconds() }
func kcmCPU(r result) float64          { return r.kcmCPU.Seconds() }
func idleCPUms(r result) float64 {
	return float64(r.idleCPUPerRecon) / float64(time.Millisecond)
}
func rssMB(r result) float64    { return float64(r.rss) / (1 << 20) }
func recordKB(r result) float64 { return r.recordBytes / 1000 }
func peakMB(r result) float64   { return float64(r.peakRSS) / (1 << 20) }
func controlPlaneMB(r result) float64 {
	return float64(r.controlPlaneRSS) / (1 << 20)
}
func p50ms(r result) float64      { return float64(r.p50) / float64(time.Millisecond) }
func p99ms(r result) float64      { return float64(r.p99) / float64(time.Millisecond) }
func idleWrites(r result) float64 { return writes(r.idleRequests) }
func idleRequestsTotal(r result) float64 {
	total := 0.0
	for _, c := range r.idleRequests {
		total += c
	}
	return total
}

func writes(byVerb map[string]float64) float64 {
	var n float64
	for verb, c := range byVerb {
		if isWrite(verb) {
			n += c
		}
	}
	return n
}

func isWrite(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

var verbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

func report(o options, machine string, results []result) string {
	sizes := slices.Concat(o.sizes, o.once, o.large)
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# `make bench`: this operator, stock helm-operator and the raw-create limit\n\n")
	w("%s\n\n", machine)
	w("Each measurement runs on a fresh control plane: etcd, kube-apiserver (audit log of every request) and kube-controller-manager, no kubelet. ")
	w("Both operators run the same chart, CRD and watches.yaml with %d reconcile workers and a 1m reconcile period; `Memcached` CRs (`replicaCount: 1`) are created by %d clients at once, %d to a namespace as tenants' would (Kubernetes is tested up to 3000 pods and 5000 Services per namespace). ", o.workers, creators, crsPerNamespace)
	w("The raw-create limit is a plain client creating the same rendered objects plus a release-sized Secret with %d clients. ", creators)
	w("Values are median (min–max) over %d repetitions; ratios are paired within a repetition", o.reps)
	if once := slices.Concat(o.once, o.large); len(once) > 0 {
		w(" (N=%s: one repetition)", joinInts(once))
	}
	if len(o.large) > 0 {
		w(". At N=%s only %s are measured", joinInts(o.large), strings.Join(o.largeVariants, " and "))
	}
	w(". Idle numbers come from a %s window after convergence.\n\n", o.idle)

	w("## Time until every Memcached reports Deployed\n\n")
	w("| N | raw-create limit | stock helm-operator | this operator | this / raw | stock / this |\n|---|---|---|---|---|---|\n")
	for _, n := range sizes {
		w("| %d | %s | %s | %s | %s | %s |\n", n,
			summarize(pick(results, "raw", n, seconds)).format(" s", 2),
			summarize(pick(results, "stock", n, seconds)).format(" s", 1),
			summarize(pick(results, "this", n, seconds)).format(" s", 1),
			summarize(ratio(results, "this", "raw", n, seconds)).format("x", 1),
			summarize(ratio(results, "stock", "this", n, seconds)).format("x", 1))
	}

	w("\n## Reconcile latency while converging\n\n")
	w("| N | stock p50 | stock p99 | this p50 | this p99 |\n|---|---|---|---|---|\n")
	for _, n := range sizes {
		w("| %d | %s | %s | %s | %s |\n", n,
			summarize(pick(results, "stock", n, p50ms)).format(" ms", 0), summarize(pick(results, "stock", n, p99ms)).format(" ms", 0),
			summarize(pick(results, "this", n, p50ms)).format(" ms", 0), summarize(pick(results, "this", n, p99ms)).format(" ms", 0))
	}

	w("\n## Where an install's time goes\n\n")
	w("From the audit log: each Memcached's create, then the operator's requests for it in order. Between an install's response and its next request the time is the operator's: its queue (before its first request), Helm's render, its CPU share of the machine; a negative time is a request sent while an earlier one was still open.\n\n")
	for _, v := range []string{"stock", "this"} {
		if n, t, ok := lastTrace(results, v, o.sizes); ok {
			w("%s at N=%d: %s\n", names[v], n, traceReport(t))
		}
	}

	w("\n## CPU while converging\n\n")
	w("Operator: until every Memcached reports Deployed. Control plane: etcd, kube-apiserver and kube-controller-manager, from the first create until the end state every variant reaches (every CR's objects made and kube-controller-manager has made every StatefulSet's pod; it is restarted with 500 requests/s for that, in every variant); kcm: kube-controller-manager alone (part of the control plane). The raw-create limit's client is not counted. All share the machine's cores.\n\n")
	w("| N | raw: control plane | raw: kcm | stock: operator | stock: control plane | stock: kcm | this: operator | this: control plane | this: kcm |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, n := range sizes {
		cpCells := func(v string) string {
			return summarize(pick(results, v, n, controlPlaneCPU)).format(" s", 1) + " | " + summarize(pick(results, v, n, kcmCPU)).format(" s", 1)
		}
		w("| %d | %s | %s | %s | %s | %s |\n", n, cpCells("raw"),
			summarize(pick(results, "stock", n, operatorCPU)).format(" s", 1), cpCells("stock"),
			summarize(pick(results, "this", n, operatorCPU)).format(" s", 1), cpCells("this"))
	}

	w("\n## The operator's API requests per CR (median)\n\n")
	w("From the first create until the end state of the control plane's CPU above: with the reports of each StatefulSet while kube-controller-manager makes its pod.\n\n")
	w("| N | operator | %s | total |\n|---|---|%s---|\n", strings.Join(verbs, " | "), strings.Repeat("---|", len(verbs)))
	for _, n := range sizes {
		for _, v := range []string{"stock", "this"} {
			if !measured(results, v, n) {
				continue
			}
			var cells []string
			total := 0.0
			for _, verb := range verbs {
				per := summarize(pick(results, v, n, func(r result) float64 { return float64(r.convergeRequests[verb]) / float64(r.n) })).med
				total += per
				cells = append(cells, fmt.Sprintf("%.1f", per))
			}
			w("| %d | %s | %s | %.1f |\n", n, v, strings.Join(cells, " | "), total)
		}
	}

	w("\n## Release records per CR, once converged\n\n")
	w("Helm's release record of each Memcached (every revision; base64 of gzipped JSON, as the Secret holds it). The raw-create limit writes one the size of Helm's record of this chart: its files and the manifest.\n\n")
	w("| N | raw-create limit | stock helm-operator | this operator | stock / this |\n|---|---|---|---|---|\n")
	for _, n := range sizes {
		w("| %d | %s | %s | %s | %s |\n", n,
			summarize(pick(results, "raw", n, recordKB)).format(" kB", 1),
			summarize(pick(results, "stock", n, recordKB)).format(" kB", 1),
			summarize(pick(results, "this", n, recordKB)).format(" kB", 1),
			summarize(ratio(results, "stock", "this", n, recordKB)).format("x", 1))
	}

	w("\n## Idle: per periodic reconcile\n\n")
	w("| N | operator | CPU | API requests | writes | reconciles in the window |\n|---|---|---|---|---|---|\n")
	for _, n := range sizes {
		for _, v := range []string{"stock", "this"} {
			if !measured(results, v, n) {
				continue
			}
			w("| %d | %s | %s | %s | %s | %s |\n", n, v,
				summarize(pick(results, v, n, idleCPUms)).format(" ms", 2),
				summarize(pick(results, v, n, idleRequestsTotal)).format("", 1),
				summarize(pick(results, v, n, idleWrites)).format("", 2),
				summarize(pick(results, v, n, func(r result) float64 { return r.idleReconciles })).format("", 0))
		}
	}

	w("\n## Memory at idle\n\n")
	w("| N | stock RSS | stock peak RSS | this RSS | this peak RSS | stock / this (RSS) |\n|---|---|---|---|---|---|\n")
	for _, n := range sizes {
		w("| %d | %s | %s | %s | %s | %s |\n", n,
			summarize(pick(results, "stock", n, rssMB)).format(" MB", 0), summarize(pick(results, "stock", n, peakMB)).format(" MB", 0),
			summarize(pick(results, "this", n, rssMB)).format(" MB", 0), summarize(pick(results, "this", n, peakMB)).format(" MB", 0),
			summarize(ratio(results, "stock", "this", n, rssMB)).format("x", 1))
	}

	scaleReport(w, o, results, sizes)
	extrasReport(w, o, results)

	w("\n## Targets\n\n| target | measured (median) | met |\n|---|---|---|\n")
	for _, n := range sizes {
		if n < 300 {
			continue
		}
		if !measured(results, "this", n) {
			continue // a run that stopped early
		}
		if measured(results, "raw", n) {
			// #6 asked for 2x; #31 set 3x, once the control plane's share of the 2 cores was known.
			x := summarize(ratio(results, "this", "raw", n, seconds)).med
			w("| N=%d: time to all Deployed ≤ 3x the raw-create limit | %.2fx | %s |\n", n, x, yes(x > 0 && x <= 3))
			c := summarize(ratio(results, "this", "raw", n, controlPlaneCPU)).med
			w("| N=%d: control-plane CPU per install ≤ 2x the raw-create limit's | %.2fx | %s |\n", n, c, yes(c > 0 && c <= 2))
		}
		if measured(results, "stock", n) {
			f := summarize(ratio(results, "stock", "this", n, seconds)).med
			w("| N=%d: ≥ 3x faster than stock | %.1fx | %s |\n", n, f, yes(f >= 3))
			rb := summarize(ratio(results, "stock", "this", n, recordKB)).med
			w("| N=%d: release record bytes per CR at most half of stock's | 1/%.1f | %s |\n", n, rb, yes(rb >= 2))
		}
	}
	for _, n := range sizes {
		if !measured(results, "this", n) {
			continue
		}
		x := summarize(pick(results, "this", n, requestsPerCR)).med
		w("| N=%d: API requests per install ≤ 9 | %.2f | %s |\n", n, x, yes(x > 0 && x <= 9))
	}
	for _, n := range sizes {
		if !measured(results, "stock", n) {
			continue
		}
		x := summarize(ratio(results, "stock", "this", n, idleCPUms)).med
		wr := summarize(pick(results, "this", n, idleWrites)).max
		w("| N=%d: idle CPU per reconcile ≤ 1/20 of stock's, with 0 writes | 1/%.0f, %.2f writes | %s |\n", n, x, wr, yes(x >= 20 && wr == 0))
	}
	for _, n := range sizes {
		if n != 1000 {
			continue
		}
		x := summarize(ratio(results, "stock", "this", n, rssMB)).med
		w("| N=1000: RSS ≤ 1/3 of stock's | 1/%.1f | %s |\n", x, yes(x >= 3))
	}
	return b.String()
}

// measured says whether variant was measured at n.
func measured(results []result, variant string, n int) bool {
	return len(pick(results, variant, n, seconds)) > 0
}

// scaleReport says what each CR costs this operator and the control plane, and at the largest N
// what the stock operator would have taken.
func scaleReport(w func(string, ...any), o options, results []result, sizes []int) {
	w("\n## What each CR costs, by N (this operator)\n\n")
	w("Resident memory at idle, and what each CR added since the next smaller N (the first row: the total per CR). Control plane: etcd, kube-apiserver and kube-controller-manager, holding each CR's objects, its StatefulSet's pod and its release record.\n\n")
	w("| N | operator RSS | per CR | control plane RSS | per CR | idle CPU per reconcile | idle requests per reconcile |\n|---|---|---|---|---|---|---|\n")
	prev, prevRSS, prevCP := 0, 0.0, 0.0
	for _, n := range sizes {
		if !measured(results, "this", n) {
			continue
		}
		rss := summarize(pick(results, "this", n, rssMB)).med
		cp := summarize(pick(results, "this", n, controlPlaneMB)).med
		w("| %d | %.0f MB | %.1f kB | %.0f MB | %.1f kB | %s | %s |\n", n, rss, (rss-prevRSS)*1024/float64(n-prev),
			cp, (cp-prevCP)*1024/float64(n-prev),
			summarize(pick(results, "this", n, idleCPUms)).format(" ms", 2),
			summarize(pick(results, "this", n, idleRequestsTotal)).format("", 1))
		prev, prevRSS, prevCP = n, rss, cp
	}
	// The stock operator's rate at the largest N it was measured at, for the N it was not.
	stockN, stockS := 0, 0.0
	for _, n := range sizes {
		if xs := pick(results, "stock", n, seconds); len(xs) > 0 {
			stockN, stockS = n, summarize(xs).med
		}
	}
	for _, n := range o.large {
		if !measured(results, "stock", n) && stockN > 0 {
			w("\nThe stock operator is not measured at N=%d: at its N=%d rate (%.1f s per 100 CRs, on these cores) converging alone would take about %.0f minutes.\n",
				n, stockN, stockS/float64(stockN)*100, stockS/float64(stockN)*float64(n)/60)
		}
	}
}

// requestsPerCR is the operator's API requests per Memcached, from the first create until settled.
func requestsPerCR(r result) float64 {
	total := 0
	for _, c := range r.convergeRequests {
		total += c
	}
	return float64(total) / float64(r.n)
}

// extrasReport compares the -extras with this operator's plain runs at the same N.
func extrasReport(w func(string, ...any), o options, results []result) {
	if len(o.extras) == 0 {
		return
	}
	n := o.extraN
	row := func(label, v string) {
		w("| %s | %s | %s | %s | %s | %s | %s | %s |\n", label,
			summarize(pick(results, v, n, seconds)).format(" s", 1),
			summarize(pick(results, v, n, operatorCPU)).format(" s", 1),
			summarize(pick(results, v, n, requestsPerCR)).format("", 1),
			summarize(pick(results, v, n, idleCPUms)).format(" ms", 2),
			summarize(pick(results, v, n, idleRequestsTotal)).format("", 1),
			summarize(pick(results, v, n, rssMB)).format(" MB", 0),
			summarize(pick(results, v, n, peakMB)).format(" MB", 0))
	}
	header := "| | time to all Deployed | operator CPU while converging | requests per CR | idle CPU per reconcile | idle requests per reconcile | RSS | peak RSS |\n|---|---|---|---|---|---|---|---|\n"
	var foreign, gc []string
	for _, v := range o.extras {
		if pv, _ := parseVariant(v); pv.foreign {
			foreign = append(foreign, v)
		} else if pv.gc() {
			gc = append(gc, v)
		}
	}
	if len(foreign) > 0 {
		w("\n## Among others' objects (N=%d, one repetition)\n\n", n)
		w("The same namespace also holds %d Helm releases that others installed with the helm CLI (records of about %d KB) and %d Deployments of others, each with its ReplicaSet and pod, all made before the operator starts. ", o.foreign.releases, o.foreign.releaseKB, o.foreign.deployments)
		w("The operator's cache holds none of the releases and keeps the Deployments as their names and labels.\n\n")
		w(header)
		row("this operator", "this")
		for _, v := range foreign {
			row("this operator, among others' objects", v)
		}
	}
	if len(gc) > 0 {
		w("\n## Garbage collector settings (N=%d, one repetition each)\n\n", n)
		w("GOGC=100 and no GOMEMLIMIT are Go's defaults (the plain runs above); in a pod the operator sets GOMEMLIMIT to 90%% of its memory limit, so a GOMEMLIMIT row shows what a limit that tight costs.\n\n")
		w(header)
		row("GOGC=100", "this")
		for _, v := range gc {
			pv, _ := parseVariant(v)
			row(pv.gcLabel(), v)
		}
	}
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// machine describes where the numbers were measured.
func machine() string {
	model, cores := "", 0
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
				switch strings.TrimSpace(k) {
				case "model name":
					model = strings.TrimSpace(v)
				case "processor":
					cores++
				}
			}
		}
		f.Close()
	}
	memGiB := 0.0
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		fmt.Sscanf(strings.TrimPrefix(strings.SplitN(string(raw), "\n", 2)[0], "MemTotal:"), "%f", &kb)
		memGiB = kb / (1 << 20)
	}
	var uts syscall.Utsname
	_ = syscall.Uname(&uts)
	release := make([]byte, 0, len(uts.Release))
	for _, c := range uts.Release {
		if c == 0 {
			break
		}
		release = append(release, byte(c))
	}
	return fmt.Sprintf("Machine: %s, %d cores, %.0f GiB, Linux %s, %s. %s.",
		model, cores, memGiB, release, runtime.Version(), versions)
}

// versions is set by -versions (the Makefile passes the pinned versions).
var versions string

// lastTrace is the trace of a variant's first repetition at the largest of sizes it has one of.
func lastTrace(results []result, variant string, sizes []int) (int, installTrace, bool) {
	for _, n := range slices.Backward(slices.Sorted(slices.Values(sizes))) {
		for _, r := range results {
			if r.variant == variant && r.n == n && r.rep == 1 && len(r.trace.steps) > 0 {
				return n, r.trace, true
			}
		}
	}
	return 0, installTrace{}, false
}
