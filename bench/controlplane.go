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
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// controlPlane is etcd and kube-apiserver (envtest, with an audit log of every request) and
// kube-controller-manager, so Deployments get ReplicaSets and the garbage collector runs. No
// kubelet: pods stay Pending, which the measured work does not need.
type controlPlane struct {
	env      *envtest.Environment
	dir      string
	admin    *rest.Config // the bench's own client
	operator string       // kubeconfig file of the operator's user
	audit    string
	// kcm runs kube-controller-manager, started again when it exits, as the kubelet restarts
	// a static pod's: a control plane at nice 19 beside other work can be slow enough for it to
	// give up (it waits 10 s for the API server's health at start).
	kcm *supervised
	// kcmSpent is the CPU of the kube-controller-managers stopped so far: cpu counts it, so a
	// restart does not lose what the one before used.
	kcmSpent  time.Duration
	kcmConfig string // kubeconfig file of kube-controller-manager's user
	// restarted are control-plane processes the chaos scenarios started again after stopping
	// envtest's; they are stopped before envtest cleans up their folders.
	restarted []*exec.Cmd
}

// operatorUser is the user the operator runs as: the audit log tells its requests apart.
const operatorUser = "bench-operator"

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
`

func startControlPlane(o options) (*controlPlane, error) {
	dir, err := os.MkdirTemp("", "bench-")
	if err != nil {
		return nil, err
	}
	cp := &controlPlane{dir: dir, audit: filepath.Join(dir, "audit.log")}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return nil, err
	}
	cp.env = &envtest.Environment{
		BinaryAssetsDirectory: o.kubeBin,
		CRDDirectoryPaths:     []string{filepath.Join(o.repo, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cp.env.ControlPlane.GetAPIServer().Configure().
		Set("audit-log-path", cp.audit).
		Set("audit-policy-file", policy).
		// In MB; 0 would be the log rotator's default of 100 MB, which the stock operator's
		// requests at N=3000 pass: the marks would point into a new file.
		Set("audit-log-maxsize", "100000").
		// Every release has a Service: envtest's default /24 runs out of addresses below N=300.
		Set("service-cluster-ip-range", "10.0.0.0/16")
	if cp.admin, err = cp.env.Start(); err != nil {
		return nil, fmt.Errorf("start etcd and kube-apiserver: %w", err)
	}
	if cp.operator, err = cp.kubeconfig(operatorUser); err != nil {
		cp.stop()
		return nil, err
	}
	if cp.kcmConfig, err = cp.kubeconfig("bench-controller-manager"); err != nil {
		cp.stop()
		return nil, err
	}
	if err := cp.startKCM(o, 0); err != nil {
		cp.stop()
		return nil, err
	}
	return cp, nil
}

// startKCM (re)starts kube-controller-manager, with its default client rate limit (20 requests/s)
// or with qps, and any further flags.
func (cp *controlPlane) startKCM(o options, qps int, flags ...string) error {
	cp.stopKCM()
	args := []string{"--kubeconfig=" + cp.kcmConfig, "--leader-elect=false", "--secure-port=0", "--controllers=*"}
	if qps > 0 {
		args = append(args, fmt.Sprintf("--kube-api-qps=%d", qps), fmt.Sprintf("--kube-api-burst=%d", 2*qps))
	}
	args = append(args, flags...)
	kcm, err := supervise(func() *exec.Cmd {
		return exec.Command(filepath.Join(o.kubeBin, "kube-controller-manager"), args...)
	}, filepath.Join(cp.dir, "kube-controller-manager.log"))
	if err != nil {
		return fmt.Errorf("start kube-controller-manager: %w", err)
	}
	cp.kcm = kcm
	return nil
}

func (cp *controlPlane) stopKCM() {
	if cp.kcm != nil {
		cp.kcm.stop()
		cp.kcmSpent += cp.kcm.cpu()
	}
	cp.kcm = nil
}

// kubeconfig writes a kubeconfig of a user with every permission and returns its path.
func (cp *controlPlane) kubeconfig(user string) (string, error) {
	u, err := cp.env.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", err
	}
	raw, err := u.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(cp.dir, user+".kubeconfig")
	return path, os.WriteFile(path, raw, 0o600)
}

func (cp *controlPlane) stop() {
	cp.stopKCM()
	for _, cmd := range cp.restarted {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	if cp.env != nil {
		_ = cp.env.Stop()
	}
	_ = os.RemoveAll(cp.dir)
}

// auditMark is a position in the audit log.
type auditMark int64

func (cp *controlPlane) mark() auditMark {
	st, err := os.Stat(cp.audit)
	if err != nil {
		return 0
	}
	return auditMark(st.Size())
}

// requests counts the operator's requests between two marks, by verb and by endpoint (with the
// response's code where it is not a success).
func (cp *controlPlane) requests(from, to auditMark) (byVerb, byEndpoint map[string]int, err error) {
	f, err := os.Open(cp.audit)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if _, err := f.Seek(int64(from), 0); err != nil {
		return nil, nil, err
	}
	if st, err := f.Stat(); err == nil && (st.Size() < int64(to) || to < from) {
		return nil, nil, fmt.Errorf("the audit log was rotated between marks %d and %d (now %d bytes)", from, to, st.Size())
	}
	byVerb, byEndpoint = map[string]int{}, map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	read := int64(from)
	for sc.Scan() && read < int64(to) {
		line := sc.Bytes()
		read += int64(len(line)) + 1
		var ev struct {
			Stage string `json:"stage"`
			Verb  string `json:"verb"`
			User  struct {
				Username string `json:"username"`
			} `json:"user"`
			ObjectRef struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
			} `json:"objectRef"`
			ResponseStatus struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
		}
		if json.Unmarshal(line, &ev) != nil || ev.User.Username != operatorUser || ev.Stage != "ResponseComplete" {
			continue
		}
		byVerb[ev.Verb]++
		endpoint := strings.TrimSuffix(ev.Verb+" "+ev.ObjectRef.Resource+"/"+ev.ObjectRef.Subresource, "/")
		if ev.ResponseStatus.Code >= 300 { // refused requests apart: conflicts are retries
			endpoint += fmt.Sprintf(" (%d)", ev.ResponseStatus.Code)
		}
		byEndpoint[endpoint]++
	}
	return byVerb, byEndpoint, sc.Err()
}

// cpu is the CPU time etcd, kube-apiserver and kube-controller-manager have used (one control
// plane runs at a time), in total and of kube-controller-manager alone (its processes so far).
func (cp *controlPlane) cpu(o options) (total, kcm time.Duration, err error) {
	procs, err := processesOf(o.kubeBin, "etcd", "kube-apiserver", "kube-controller-manager")
	if err != nil {
		return 0, 0, err
	}
	total, kcm = cp.kcmSpent, cp.kcmSpent
	if cp.kcm != nil {
		ended := cp.kcm.cpu()
		total, kcm = total+ended, kcm+ended
	}
	for pid, binary := range procs {
		if c, err := processCPU(pid); err == nil {
			total += c
			if binary == "kube-controller-manager" {
				kcm += c
			}
		}
	}
	return total, kcm, nil
}

// memory is the resident memory of etcd, kube-apiserver and kube-controller-manager, in bytes.
func (cp *controlPlane) memory(o options) (int64, error) {
	procs, err := processesOf(o.kubeBin, "etcd", "kube-apiserver", "kube-controller-manager")
	if err != nil {
		return 0, err
	}
	var total int64
	for pid := range procs {
		rss, _, err := processMemory(pid)
		if err != nil {
			return 0, err
		}
		total += rss
	}
	return total, nil
}

// processesOf lists the running processes of some of the control plane's binaries in kubeBin
// that this process started (envtest's, kube-controller-manager, a kube-apiserver started again):
// pid to binary name.
func processesOf(kubeBin string, binaries ...string) (map[int]string, error) {
	want := map[string]string{}
	for _, b := range binaries {
		abs, err := filepath.Abs(filepath.Join(kubeBin, b))
		if err != nil {
			return nil, err
		}
		want[abs] = b
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	found := map[int]string{}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || want[exe] == "" {
			continue
		}
		// This process's own: another control plane of the same binaries (the local cluster of
		// make test-e2e, which CI runs beside make chaos) is not the bench's to stop or measure.
		if stat, err := processStat(pid); err == nil && stat[1] == strconv.Itoa(os.Getpid()) {
			found[pid] = want[exe]
		}
	}
	return found, nil
}

// profileConverging starts kube-apiserver's CPU profile of a variant's convergence
// (converge-apiserver-cpu-<variant>-n<n>.pprof); the channel says how it ended.
func (cp *controlPlane) profileConverging(o options, variant string, n int) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- cp.profileAPIServer(o.convergeProfile, profilePath(o, "converge-apiserver-cpu", variant, n))
	}()
	return done
}

// profileAPIServer writes a CPU profile of kube-apiserver's next d to path ("": none), through
// its own /debug/pprof (--profiling is on by default; the bench's user may read it). It says
// where the control plane's CPU per install goes, next to the operator's own profile.
func (cp *controlPlane) profileAPIServer(d time.Duration, path string) error {
	if path == "" {
		return nil
	}
	hc, err := rest.HTTPClientFor(cp.admin)
	if err != nil {
		return err
	}
	return downloadWith(hc, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(cp.admin.Host, "/"), int(d.Seconds())), path)
}
