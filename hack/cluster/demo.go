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
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// demo shows the product working: on the current kube context if one is set and reachable, else
// on the local cluster, which it brings up. It deploys the operator with `make deploy`, applies
// both samples, waits for their pods and prints them.
type demo struct {
	c        *Cluster
	self     string
	repo     string
	img      string    // operator image the current context can pull
	localImg string    // operator image built and pushed when the demo runs on the local cluster
	since    time.Time // when make demo began: its first phase ran before this tool
	env      []string
}

const demoNamespace = "default" // the tutorial applies the samples there

// The demo's phases, in order. The titles are the keys of the measured log (demoTimesLog): a
// renamed or added phase needs a new measured run.
const (
	phaseTool     = "Debian packages make needs, and the demo's cluster tool"
	phaseKubectl  = "kubectl"
	phaseBinaries = "Kubernetes binaries of the local cluster"
	phaseCluster  = "local cluster: etcd, control plane, containerd, kubelet, kube-proxy, CoreDNS, registry"
	phaseImages   = "images: the operator, memcached and a memcached client, pushed to the local registry"
	phaseOperator = "operator: make deploy"
	phaseSamples  = "samples: 3 memcached servers (Memcached) and 2 backup pods (MemcachedBackup), 1000 keys stored and read back"
)

// localPhases are the phases of a demo on the local cluster; on a reachable context it skips the
// cluster's three.
var localPhases = []string{phaseTool, phaseKubectl, phaseBinaries, phaseCluster, phaseImages, phaseOperator, phaseSamples}

// demoTimesLog is the committed log of a measured first and second run of the demo; each phase's
// title shows what it took in the first run, so a person knows what to expect.
const demoTimesLog = "bench/results/demo.md"

// phases prints the steps of a long command with the time each took, so a person can follow it.
// The first phase (the make prerequisites that build this tool) ran before it: its start comes
// from the Makefile.
type phases struct {
	start, phase, end time.Time
	n, total          int
	title             string
	took              []phaseTime
	firstRun          map[string]time.Duration // demoTimesLog's first run, by title
}

type phaseTime struct {
	title string
	took  time.Duration
}

func (p *phases) next(title string) {
	now := time.Now()
	if p.title != "" {
		p.done()
	}
	p.n++
	p.phase, p.title = now, title
	fmt.Printf("\n==> [%d/%d] %s%s\n", p.n, p.total, title, p.expect())
}

// expect says what the phase took in the first run of demoTimesLog.
func (p *phases) expect() string {
	d, ok := p.firstRun[p.title]
	if !ok {
		if p.firstRun != nil {
			logf("%s has no time for the phase %q: measure the demo again", demoTimesLog, p.title)
		}
		return ""
	}
	return fmt.Sprintf(" (the first run here, cold Go caches: %s)", d)
}

func (p *phases) done() {
	p.end = time.Now()
	took := p.end.Sub(p.phase).Round(time.Second)
	p.took = append(p.took, phaseTime{p.title, took})
	expect := ""
	if p.n == 1 { // the Makefile printed its title
		expect = p.expect()
	}
	fmt.Printf("    done in %s (%s in all)%s\n", took, p.end.Sub(p.start).Round(time.Second), expect)
}

// table is this run's times in demoTimesLog's form.
func (p *phases) table() string {
	var b strings.Builder
	b.WriteString("| phase | took |\n|---|---|\n")
	for _, t := range p.took {
		fmt.Fprintf(&b, "| %s | %s |\n", t.title, t.took)
	}
	fmt.Fprintf(&b, "| in all | %s |\n", p.end.Sub(p.start).Round(time.Second))
	return b.String()
}

// The headings of demoTimesLog's runs.
const (
	firstRunHeading  = "## First run"
	secondRunHeading = "## Second run"
)

// runTimes reads the phase times of one run in demoTimesLog: the table under the heading that
// begins with run.
func runTimes(log, run string) (map[string]time.Duration, error) {
	times := map[string]time.Duration{}
	in := false
	for _, line := range strings.Split(log, "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = strings.HasPrefix(line, run)
		case in && strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| phase "):
			cells := strings.Split(strings.Trim(line, "| "), " | ")
			if len(cells) != 2 {
				return nil, fmt.Errorf("%s: a row under %q is not | phase | took |: %q", demoTimesLog, run, line)
			}
			d, err := time.ParseDuration(cells[1])
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %w", demoTimesLog, line, err)
			}
			times[cells[0]] = d
		}
	}
	if _, ok := times["in all"]; !ok {
		return nil, fmt.Errorf("%s has no table with an \"in all\" row under %q", demoTimesLog, run)
	}
	return times, nil
}

func (d *demo) run() error {
	p := &phases{total: len(localPhases), start: d.since}
	if b, err := os.ReadFile(filepath.Join(d.repo, demoTimesLog)); err == nil {
		if p.firstRun, err = runTimes(string(b), firstRunHeading); err != nil {
			logf("%v", err)
		}
	}
	// Without a kubeconfig, or with the local cluster's, the demo runs on the local cluster: its
	// Debian packages install beside the compiles, which leave the network and the disk idle.
	// With another it likely runs there, without the cluster's three phases; kubectl tells.
	_, localUp := d.c.pid("kube-apiserver")
	remote := d.kubeconfigSet() && os.Getenv("KUBECONFIG") != d.c.Kubeconfig() && !localUp
	switch {
	case remote:
		p.total = len(localPhases) - 3
	case localUp: // the demo runs on it
	case os.Geteuid() != 0:
		return errLocalNeedsRoot
	default:
		logf(bringsUpLocal, "no kube context but the local cluster's is set")
	}
	// The Makefile ran the first phase: it printed its title and built this tool.
	p.n, p.phase, p.title = 1, d.since, phaseTool
	p.next(phaseKubectl)
	var packages *packageInstall
	if !remote {
		packages = d.installPackages()
		// On every return: apt is not left running alone, and what it said is shown.
		defer func() { _ = packages.wait() }()
	}
	if err := d.make(d.c.bin("kubectl")); err != nil {
		return err
	}
	if err := packages.failed(); err != nil {
		return err
	}
	local := !remote
	if remote {
		var err error
		if local, err = d.chooseCluster(); err != nil {
			return err
		}
	}
	memcachedImg := os.Getenv("MEMCACHED_IMG")
	if local {
		p.total = len(localPhases)
		d.img = d.localImg
		d.env = append(d.env, "KUBECONFIG="+d.c.Kubeconfig(), "KUBECACHEDIR="+d.c.path("kubectl-cache"))
		if packages == nil {
			packages = d.installPackages()
			defer func() { _ = packages.wait() }()
		}
		p.next(phaseBinaries)
		if err := d.make("cluster-binaries"); err != nil {
			return err
		}
		p.next(phaseCluster)
		if err := packages.wait(); err != nil {
			return err
		}
		if err := d.c.up(d.self); err != nil {
			return err
		}
		p.next(phaseImages)
		if err := d.make("demo-images", "E2E_IMG="+d.img); err != nil {
			return err
		}
		b, err := os.ReadFile(d.c.path("memcached-image"))
		if err != nil {
			return err
		}
		memcachedImg = strings.TrimSpace(string(b))
	} else if d.img == "" {
		return fmt.Errorf("the current kube context is reachable, so the demo runs there: set IMG to an operator image that cluster can pull (and MEMCACHED_IMG to mirror memcached), or unset KUBECONFIG to use the local cluster")
	}

	p.next(phaseOperator)
	if err := d.deploy(memcachedImg); err != nil {
		return err
	}
	p.next(phaseSamples)
	if err := d.applySamples(); err != nil {
		return err
	}
	if local {
		// An application's sharding client in the cluster finds the servers through SRV, stores
		// keys over them and reads every one back.
		if err := d.runClient("-srv", demoSRV(), "-op", "check", "-keys", "1000"); err != nil {
			return err
		}
	}
	p.done()
	d.summary(local)
	d.saveTimes(p)
	return nil
}

// saveTimes prints this run's phase times and writes them beside the binaries, in the form of
// demoTimesLog.
func (d *demo) saveTimes(p *phases) {
	table := p.table()
	out := filepath.Join(d.repo, "bin", "demo-times.md")
	fmt.Printf("\nPhase times (also in %s; %s holds a measured first and second run):\n%s", out, demoTimesLog, table)
	head := fmt.Sprintf("Run of %s, %d cores.\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU())
	if err := os.WriteFile(out, []byte(head+table), 0o644); err != nil {
		logf("%v", err)
	}
}

// packageInstall is `hack/host-packages.sh cluster` running in the background; its output is
// printed when the demo first waits for it.
type packageInstall struct {
	done    chan struct{}
	out     bytes.Buffer
	err     error
	printed bool
}

func (d *demo) installPackages() *packageInstall {
	pi := &packageInstall{done: make(chan struct{})}
	cmd := exec.Command(filepath.Join(d.repo, "hack", "host-packages.sh"), "cluster")
	cmd.Stdout, cmd.Stderr = &pi.out, &pi.out
	fmt.Println("    (the local cluster's Debian packages install beside it: hack/host-packages.sh cluster)")
	go func() {
		defer close(pi.done)
		if pi.err = cmd.Run(); pi.err != nil {
			pi.err = fmt.Errorf("hack/host-packages.sh cluster: %w", pi.err)
		}
	}()
	return pi
}

func (pi *packageInstall) wait() error {
	<-pi.done
	if !pi.printed {
		pi.printed = true
		fmt.Print(pi.out.String())
	}
	return pi.err
}

// failed returns the install's error if it has already ended with one (no apt, not root): the
// demo stops before compiling more.
func (pi *packageInstall) failed() error {
	if pi == nil {
		return nil
	}
	select {
	case <-pi.done:
		return pi.wait()
	default:
		return nil
	}
}

// clientImage is the sharding memcached client that `make demo-images` pushes
// (tests/e2e/memcache-client).
var clientImage = RegistryHost + "/memcache-client:dev"

// demoSRV is the SRV name of the sample's servers.
func demoSRV() string {
	return "_memcache._tcp.memcached-sample-headless." + demoNamespace + ".svc.cluster.local"
}

// deploy runs make deploy and waits for the operator.
func (d *demo) deploy(memcachedImg string) error {
	// make deploy records the image in config/manager/kustomization.yaml; keep the tree clean.
	kustomization := filepath.Join(d.repo, "config", "manager", "kustomization.yaml")
	before, err := os.ReadFile(kustomization)
	if err != nil {
		return err
	}
	deployArgs := []string{"deploy", "IMG=" + d.img}
	if memcachedImg != "" {
		deployArgs = append(deployArgs, "MEMCACHED_IMG="+memcachedImg)
	}
	err = d.make(deployArgs...)
	if restoreErr := os.WriteFile(kustomization, before, 0o644); err == nil {
		err = restoreErr
	}
	if err != nil {
		return err
	}
	return d.kubectlShow("-n", "memcached-operator-system", "rollout", "status", "deployment/memcached-operator-controller-manager", "--timeout=3m")
}

// applySamples applies both samples and waits for their pods to be Running and Ready.
func (d *demo) applySamples() error {
	steps := [][]string{
		{"-n", demoNamespace, "apply", "-f", "config/samples/cache_v1_memcached.yaml", "-f", "config/samples/cache_v1_memcachedbackup.yaml"},
		{"-n", demoNamespace, "wait", "memcached/memcached-sample", "--for=condition=Deployed", "--timeout=3m"},
	}
	for _, s := range steps {
		if err := d.kubectlShow(s...); err != nil {
			return err
		}
	}
	for _, w := range []struct{ selector, want string }{
		{"app.kubernetes.io/instance=memcached-sample", "3"},
		{"app.kubernetes.io/instance=memcachedbackup-sample", "2"},
	} {
		if err := waitFor(w.want+" Running pods "+w.selector, 3*time.Minute, func() error {
			out, err := d.kubectl("-n", demoNamespace, "get", "pods", "-l", w.selector, "--field-selector=status.phase=Running", "-o", "name")
			if err != nil {
				return err
			}
			if n := len(strings.Fields(out)); fmt.Sprint(n) != w.want {
				return fmt.Errorf("%d Running", n)
			}
			return nil
		}); err != nil {
			return err
		}
		if err := d.kubectlShow("-n", demoNamespace, "wait", "pod", "-l", w.selector, "--for=condition=Ready", "--timeout=3m"); err != nil {
			return err
		}
	}
	// Available once every server has been ready for minReadySeconds: the summary then shows it so.
	if err := d.kubectlShow("-n", demoNamespace, "wait", "memcached/memcached-sample", "--for=condition=Available", "--timeout=3m"); err != nil {
		return err
	}
	return d.kubectlShow("-n", demoNamespace, "wait", "memcachedbackup/memcachedbackup-sample", "--for=condition=Available", "--timeout=3m")
}

// summary shows what runs and what to try next.
func (d *demo) summary(local bool) {
	fmt.Println("\nWhat runs now:")
	for _, s := range [][]string{
		{"-n", demoNamespace, "get", "memcached,memcachedbackup"},
		{"-n", demoNamespace, "get", "pods", "-o", "wide"},
	} {
		_ = d.kubectlShow(s...)
	}
	fmt.Println("\nTry next:")
	if local {
		fmt.Printf("  export KUBECONFIG=%s PATH=%s:$PATH\n", d.c.Kubeconfig(), d.c.BinDir)
	}
	fmt.Println("  kubectl get memcached memcached-sample -o yaml           # conditions, version, servers")
	fmt.Println("  kubectl get memcached memcached-sample -o jsonpath='{.status.servers}'   # what clients shard keys over")
	fmt.Println("  kubectl patch memcached memcached-sample --type=merge -p '{\"spec\":{\"replicaCount\":5}}'")
	fmt.Println("  kubectl patch memcached memcached-sample --type=merge -p '{\"spec\":{\"memcached\":{\"maxMemoryMB\":128}}}'   # in place: no restart")
	fmt.Println("  kubectl get memcachedbackup memcachedbackup-sample -o jsonpath='{.status.nodes}'")
	if local {
		fmt.Printf("  kubectl run mc --rm -i --restart=Never --image=%s -- -srv %s -op check -keys 10000\n", clientImage, demoSRV())
	}
	fmt.Println("  make demo-down                                            # remove it all")
}

var errLocalNeedsRoot = fmt.Errorf("no reachable kube context, and the local cluster needs root: run `sudo make demo`, or point KUBECONFIG at a cluster and set IMG")

const bringsUpLocal = "%s: the demo brings up the local cluster (as root: containerd, the kubelet, CNI and kube-proxy)"

// chooseCluster says whether the demo runs on the local cluster (true) or the current context,
// when a kubeconfig other than the local cluster's is set and no local cluster runs.
func (d *demo) chooseCluster() (bool, error) {
	if d.contextReachable() {
		logf("the current kube context is reachable: the demo runs there")
		return false, nil
	}
	if os.Geteuid() != 0 {
		return false, errLocalNeedsRoot
	}
	logf(bringsUpLocal, "no reachable kube context")
	return true, nil
}

// kubeconfigSet says whether a kube context may be configured.
func (d *demo) kubeconfigSet() bool {
	return os.Getenv("KUBECONFIG") != "" || fileExists(filepath.Join(os.Getenv("HOME"), ".kube", "config"))
}

// contextReachable says whether a kube context is configured and answers.
func (d *demo) contextReachable() bool {
	if !d.kubeconfigSet() {
		return false
	}
	_, err := exec.Command(d.c.bin("kubectl"), "version", "--request-timeout=5s").CombinedOutput()
	return err == nil
}

// down undoes the demo: the samples, the operator, and the local cluster if it runs or is half
// up. With nothing up it says so and succeeds.
func (d *demo) down() error {
	if d.c.anyRunning() || fileExists(d.c.StateDir) {
		if _, ok := d.c.pid("kube-apiserver"); ok {
			d.env = append(d.env, "KUBECONFIG="+d.c.Kubeconfig(), "KUBECACHEDIR="+d.c.path("kubectl-cache"))
			d.removeDemo()
		}
		return d.c.down()
	}
	if fileExists(d.c.bin("kubectl")) && d.contextReachable() {
		d.removeDemo()
		return nil
	}
	fmt.Println("demo-down: nothing to remove: no local cluster runs and no kube context is reachable")
	return nil
}

// removeDemo deletes the samples and the operator from the cluster the demo runs on.
func (d *demo) removeDemo() {
	_ = d.kubectlShow("-n", demoNamespace, "delete", "--ignore-not-found", "--timeout=2m",
		"-f", "config/samples/cache_v1_memcached.yaml", "-f", "config/samples/cache_v1_memcachedbackup.yaml")
	if err := d.make("undeploy", "ignore-not-found=true"); err != nil {
		logf("%v", err)
	}
}

func (d *demo) environ() []string {
	return append(append(os.Environ(), "PATH="+d.c.BinDir+":"+os.Getenv("PATH")), d.env...)
}

func (d *demo) make(args ...string) error {
	cmd := exec.Command("make", append([]string{"--no-print-directory"}, args...)...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = d.repo, d.environ(), os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("make %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

func (d *demo) kubectl(args ...string) (string, error) {
	cmd := exec.Command(d.c.bin("kubectl"), args...)
	cmd.Dir, cmd.Env = d.repo, d.environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// runClient runs the sharding client once as a pod and prints its output. Not `kubectl run -i
// --rm`: attaching races a client that ends quickly (kubectl then warns it could not attach and
// falls back to the logs) and prints kubectl's session banner; the pod's logs once it has ended
// are all the client says.
func (d *demo) runClient(args ...string) error {
	const pod = "memcached-demo-client"
	fmt.Printf("$ kubectl -n %s run %s --restart=Never --image=%s -- %s\n", demoNamespace, pod, clientImage, strings.Join(args, " "))
	if _, err := d.kubectl("-n", demoNamespace, "delete", "pod", pod, "--ignore-not-found", "--wait"); err != nil {
		return err
	}
	if _, err := d.kubectl(append([]string{"-n", demoNamespace, "run", pod, "--restart=Never", "--image=" + clientImage, "--"}, args...)...); err != nil {
		return err
	}
	defer func() {
		_, _ = d.kubectl("-n", demoNamespace, "delete", "pod", pod, "--ignore-not-found", "--wait=false")
	}()
	var phase string
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(time.Second) {
		out, err := d.kubectl("-n", demoNamespace, "get", "pod", pod, "-o", "jsonpath={.status.phase}")
		if err != nil {
			return err
		}
		if phase = strings.TrimSpace(out); phase == "Succeeded" || phase == "Failed" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the demo client did not end within 3 minutes (pod %s is %s): kubectl -n %s describe pod %s", pod, phase, demoNamespace, pod)
		}
	}
	logs, err := d.kubectl("-n", demoNamespace, "logs", pod)
	fmt.Print(logs)
	switch {
	case err != nil:
		return err
	case phase != "Succeeded":
		return fmt.Errorf("the demo client failed (its log is above)")
	}
	return nil
}

func (d *demo) kubectlShow(args ...string) error {
	fmt.Printf("$ kubectl %s\n", strings.Join(args, " "))
	out, err := d.kubectl(args...)
	fmt.Print(out)
	return err
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
