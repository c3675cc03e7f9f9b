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
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// `bench chaos` (make chaos) runs fault scenarios at scale on the bench's control plane: each
// starts from N Memcached CRs being created, injects its faults while they converge, then leaves
// the operator alone and checks the end state (inspect.go). A scenario fails on any leftover.

type chaosOptions struct {
	options
	n      int
	window time.Duration
	settle time.Duration
	seed   uint64
}

// scenario starts the operator (one process, unless start does otherwise), injects faults into a
// run while the CRs converge (faults returns when they are over), and may add notes at the end.
type scenario struct {
	name, title string
	faults      func(ctx context.Context, r *chaosRun) error
	start       func(ctx context.Context, r *chaosRun) error
	report      func(ctx context.Context, r *chaosRun)
	// noExits: the operator must ride the faults out without exiting.
	noExits bool
}

var scenarios = []scenario{
	{name: "kill", title: "operator SIGKILLed every 2-5 s while the CRs converge", faults: killFaults},
	{name: "churn", title: "the same, with 100 spec changes and 100 deletions mixed in", faults: churnFaults},
	{name: "outage", title: "kube-apiserver down 20 s, then etcd paused 10 s, while the CRs converge", faults: outageFaults, noExits: true},
	{name: "split", title: "two operator pods started at once; the leader frozen and its pod force-deleted while the CRs converge, then resumed",
		faults: splitFaults, start: startPair, report: splitReport, noExits: true},
}

// chaosRun is one scenario on its own control plane.
type chaosRun struct {
	o  chaosOptions
	cp *controlPlane
	kc kubernetes.Interface
	dc dynamic.Interface
	// operators are the operator processes; the first is the one the kill scenarios kill.
	operators []*supervised
	rng       *rand.Rand
	want      expectation
	notes     []string
}

type chaosResult struct {
	scenario scenario
	converge time.Duration
	exits    int
	state    endState
	notes    []string
	err      error
}

func chaosMain(args []string) {
	var o chaosOptions
	var names string
	fs := flag.NewFlagSet("chaos", flag.ExitOnError)
	fs.StringVar(&o.repo, "repo", "..", "the operator's repository (CRDs, chart, watches.yaml)")
	fs.StringVar(&o.binDir, "bin-dir", "../bin/bench", "folder of the manager binary")
	fs.StringVar(&o.kubeBin, "kube-bin", "", "folder of etcd, kube-apiserver and kube-controller-manager")
	fs.StringVar(&o.out, "out", "results", "folder for chaos.md")
	fs.IntVar(&o.n, "n", 300, "number of Memcached CRs")
	fs.IntVar(&o.workers, "workers", 8, "reconcile workers")
	fs.DurationVar(&o.window, "window", time.Minute, "how long faults are injected at most")
	fs.DurationVar(&o.settle, "settle", 10*time.Minute, "how long the operator has to reach the end state after the faults")
	fs.Uint64Var(&o.seed, "seed", uint64(time.Now().UnixNano()), "seed of the fault timing")
	fs.StringVar(&names, "scenarios", "kill,churn,outage,split", "scenarios to run (split needs root)")
	_ = fs.Parse(args)
	if o.kubeBin == "" {
		fail(fmt.Errorf("-kube-bin is required"))
	}
	logSilently()
	ctx, stop := signalContext()
	defer stop()

	var results []chaosResult
	for _, name := range strings.Split(names, ",") {
		sc, ok := findScenario(name)
		if !ok {
			fail(fmt.Errorf("-scenarios: no scenario %q", name))
		}
		progress("scenario %s: %s", sc.name, sc.title)
		res := runScenario(ctx, o, sc)
		if res.err != nil {
			progress("  error: %v", res.err)
		} else {
			progress("  end state after %s, %d operator exits, %d leftovers", res.converge.Round(time.Second), res.exits, len(res.state.leftovers))
		}
		results = append(results, res)
	}
	md := chaosReport(o, results)
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		fail(err)
	}
	if err := os.WriteFile(filepath.Join(o.out, "chaos.md"), []byte(md), 0o644); err != nil {
		fail(err)
	}
	fmt.Print(md)
	for _, r := range results {
		if r.err != nil || len(r.state.leftovers) > 0 {
			fail(fmt.Errorf("scenario %s failed (see %s)", r.scenario.name, filepath.Join(o.out, "chaos.md")))
		}
	}
}

func findScenario(name string) (scenario, bool) {
	for _, s := range scenarios {
		if s.name == strings.TrimSpace(name) {
			return s, true
		}
	}
	return scenario{}, false
}

func runScenario(ctx context.Context, o chaosOptions, sc scenario) (res chaosResult) {
	res.scenario = sc
	cp, err := startControlPlane(o.options)
	if err != nil {
		res.err = err
		return res
	}
	defer cp.stop()
	r := &chaosRun{o: o, cp: cp, rng: rand.New(rand.NewPCG(o.seed, uint64(len(sc.name)))), want: expectation{}}
	if r.kc, err = kubernetes.NewForConfig(cp.admin); err != nil {
		res.err = err
		return res
	}
	if r.dc, err = dynamic.NewForConfig(cp.admin); err != nil {
		res.err = err
		return res
	}
	if _, err := r.kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}, metav1.CreateOptions{}); err != nil {
		res.err = err
		return res
	}
	defer func() {
		for _, op := range r.operators {
			op.stop()
		}
	}()
	start := sc.start
	if start == nil {
		start = func(ctx context.Context, r *chaosRun) error {
			op, err := r.startOperator("operator", nil, false)
			r.operators = append(r.operators, op)
			return err
		}
	}
	if err := start(ctx, r); err != nil {
		res.err = err
		return res
	}
	// Its StatefulSets' pods are made at once (as in the bench's idle phase): the scenarios
	// are about the operator, not about kube-controller-manager's rate limit. The garbage
	// collector says what it deletes (split's lock goes that way).
	if err := cp.startKCM(o.options, 500, "--vmodule=garbagecollector=2"); err != nil {
		res.err = err
		return res
	}
	defer func() {
		if n := cp.kcm.exits(); n > 0 {
			res.notes = append(res.notes, fmt.Sprintf("kube-controller-manager exited %d times and was started again (as the kubelet restarts a static pod)", n))
		}
	}()

	for i := 0; i < o.n; i++ {
		r.want[crName(i)] = 1
	}
	began := time.Now()
	if err := parallel(o.n, func(i int) error { return r.create(ctx, crName(i)) }); err != nil {
		res.err = fmt.Errorf("create Memcacheds: %w", err)
		return res
	}
	if err := sc.faults(ctx, r); err != nil {
		res.err = fmt.Errorf("faults: %w", err)
		return res
	}
	// Left alone, the operator must reach the end state, and stay there.
	deadline := time.Now().Add(o.settle)
	for {
		st, err := inspect(ctx, r.kc, r.dc, r.want)
		if err == nil && len(st.leftovers) == 0 {
			res.converge = time.Since(began)
			time.Sleep(10 * time.Second)
			st, err = inspect(ctx, r.kc, r.dc, r.want)
		}
		res.state, res.err = st, err
		if (err == nil && len(st.leftovers) == 0) || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(2 * time.Second)
	}
	if res.converge == 0 || len(res.state.leftovers) > 0 {
		res.converge = 0
		res.notes = append(res.notes, fmt.Sprintf("no clean end state %s after the faults", o.settle))
	}
	for _, op := range r.operators {
		res.exits += op.exits()
	}
	if sc.noExits && res.exits > 0 && res.err == nil {
		res.err = fmt.Errorf("the operator exited %d times; it must ride these faults out", res.exits)
	}
	if sc.report != nil {
		sc.report(ctx, r)
	}
	if n, err := r.recoveredCRs(ctx); err == nil {
		r.notes = append(r.notes, fmt.Sprintf("%d CRs had a release left pending and recovered (Event ReleaseRecovered)", n))
	}
	res.notes = append(res.notes, r.notes...)
	return res
}

// startOperator runs this operator under supervision, on fixed ports across restarts, with its
// log in name.log; with a pod's environment (env) and as a pod would (leader election) if asPod.
func (r *chaosRun) startOperator(name string, env []string, asPod bool) (*supervised, error) {
	cmd, _, err := operatorCommand(r.o.options, r.cp, "this", asPod)
	if err != nil {
		return nil, err
	}
	args, cmdEnv := cmd.Args, append(cmd.Env, env...)
	if asPod {
		args = inPodMounts(args)
	}
	return supervise(func() *exec.Cmd {
		c := exec.Command(args[0], args[1:]...)
		c.Dir, c.Env = r.o.repo, cmdEnv
		return c
	}, filepath.Join(r.cp.dir, name+".log"))
}

func (r *chaosRun) create(ctx context.Context, name string) error {
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cache.my.domain/v1", "kind": "Memcached",
		"metadata": map[string]any{"name": name, "namespace": benchNamespace},
		"spec":     map[string]any{"replicaCount": int64(1)},
	}}
	_, err := r.dc.Resource(memcachedGVR).Namespace(benchNamespace).Create(ctx, cr, metav1.CreateOptions{})
	return err
}

// killLoop SIGKILLs the operator every 2-5 s (random) until d has passed, or until every CR is
// Deployed once during (called before each kill) reports it is done; it returns how many kills
// it sent.
func (r *chaosRun) killLoop(ctx context.Context, d time.Duration, during func(elapsed time.Duration) (bool, error)) (int, error) {
	kills := 0
	start := time.Now()
	for time.Since(start) < d {
		wait := 2*time.Second + time.Duration(r.rng.Int64N(int64(3*time.Second)))
		select {
		case <-ctx.Done():
			return kills, ctx.Err()
		case <-time.After(wait):
		}
		done := true
		if during != nil {
			var err error
			if done, err = during(time.Since(start)); err != nil {
				return kills, err
			}
		}
		if done && r.allDeployed(ctx) {
			break
		}
		r.operators[0].kill()
		kills++
	}
	return kills, nil
}

// allDeployed reports whether every CR that must exist is Deployed.
func (r *chaosRun) allDeployed(ctx context.Context) bool {
	list, err := r.dc.Resource(memcachedGVR).Namespace(benchNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	deployed := 0
	for i := range list.Items {
		if _, ok := r.want[list.Items[i].GetName()]; ok && deployedCondition(&list.Items[i]) {
			deployed++
		}
	}
	return deployed == len(r.want)
}

func killFaults(ctx context.Context, r *chaosRun) error {
	kills, err := r.killLoop(ctx, r.o.window, nil)
	r.notes = append(r.notes, fmt.Sprintf("%d SIGKILLs", kills))
	return err
}

// churnFaults kills as killFaults does and, meanwhile, changes the specs of the first 100 CRs
// (replicaCount 1 to 2) and deletes the last 100 (a third each, for fewer than 300 CRs), in a
// random order spread over the first 20 s.
func churnFaults(ctx context.Context, r *chaosRun) error {
	changes := min(100, r.o.n/3)
	deletions := changes
	type action struct {
		name   string
		delete bool
	}
	var actions []action
	for i := range changes {
		actions = append(actions, action{name: crName(i)})
	}
	for i := r.o.n - deletions; i < r.o.n; i++ {
		actions = append(actions, action{name: crName(i), delete: true})
	}
	r.rng.Shuffle(len(actions), func(i, j int) { actions[i], actions[j] = actions[j], actions[i] })
	done := 0
	kills, err := r.killLoop(ctx, r.o.window, func(elapsed time.Duration) (bool, error) {
		// Spread the actions evenly over the first 20 s.
		due := min(len(actions), int(elapsed*time.Duration(len(actions))/(20*time.Second)))
		for ; done < due; done++ {
			a := actions[done]
			res := r.dc.Resource(memcachedGVR).Namespace(benchNamespace)
			if a.delete {
				delete(r.want, a.name)
				if err := res.Delete(ctx, a.name, metav1.DeleteOptions{}); err != nil {
					return false, fmt.Errorf("delete %s: %w", a.name, err)
				}
				continue
			}
			r.want[a.name] = 2
			if _, err := res.Patch(ctx, a.name, types.MergePatchType, []byte(`{"spec":{"replicaCount":2}}`), metav1.PatchOptions{}); err != nil {
				return false, fmt.Errorf("change %s: %w", a.name, err)
			}
		}
		return done == len(actions), nil
	})
	r.notes = append(r.notes, fmt.Sprintf("%d SIGKILLs, %d spec changes, %d deletions", kills, changes, deletions))
	return err
}

func chaosReport(o chaosOptions, results []chaosResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Chaos: faults at scale, nothing lost, nothing stuck\n\n")
	fmt.Fprintf(&b, "%s\n\n", machine())
	fmt.Fprintf(&b, "Each scenario of `make chaos` runs on a fresh control plane (etcd, kube-apiserver, "+
		"kube-controller-manager; no kubelet) with this operator (%d reconcile workers) started again %s after each "+
		"exit, as a kubelet restarts a container; %d `Memcached` CRs (`replicaCount: 1`) are created by %d clients "+
		"at once, faults are injected for at most %s, then the operator is left alone until the end state holds "+
		"(and still holds 10 s later) or %s have passed. Seed %d.\n\n",
		o.workers, restartDelay, o.n, creators, o.window, o.settle, o.seed)
	b.WriteString("The end state: every CR that exists `Deployed`; every CR's release has exactly one deployed " +
		"revision, its last, and none left `pending-*`; every object of its manifest exists; no object the chart made " +
		"belongs to no deployed release; deleted CRs are gone with their release records; each StatefulSet runs the " +
		"replicas its CR asks for. Anything else is a leftover, and fails the scenario.\n\n")
	b.WriteString("| scenario | end state after | operator exits | revisions per CR (max / mean) | revisions marked failed after a cut-off | leftovers | result |\n|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		converge, revisions, result := "—", "—", "pass"
		if r.converge > 0 {
			converge = r.converge.Round(time.Second).String()
		}
		if r.state.releases > 0 {
			revisions = fmt.Sprintf("%d / %.2f", r.state.maxRevision, float64(r.state.sumRevision)/float64(r.state.releases))
		}
		if r.err != nil || len(r.state.leftovers) > 0 {
			result = "**fail**"
		}
		fmt.Fprintf(&b, "| %s: %s | %s | %d | %s | %d | %d | %s |\n", r.scenario.name, r.scenario.title, converge, r.exits,
			revisions, r.state.interrupted, len(r.state.leftovers), result)
	}
	b.WriteString("\n")
	for _, r := range results {
		fmt.Fprintf(&b, "- **%s**: %s.", r.scenario.name, strings.Join(r.notes, ", "))
		if r.err != nil {
			fmt.Fprintf(&b, " Error: %v.", r.err)
		}
		const shown = 20
		for i, l := range r.state.leftovers {
			if i == shown {
				fmt.Fprintf(&b, "\n  - and %d more", len(r.state.leftovers)-shown)
				break
			}
			fmt.Fprintf(&b, "\n  - %s", l)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// recoveredCRs counts the CRs whose release the operator recovered from a cut-off operation.
func (r *chaosRun) recoveredCRs(ctx context.Context) (int, error) {
	events, err := r.kc.EventsV1().Events(benchNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	crs := map[string]bool{}
	for _, e := range events.Items {
		if e.Reason == "ReleaseRecovered" {
			crs[e.Regarding.Name] = true
		}
	}
	return len(crs), nil
}
