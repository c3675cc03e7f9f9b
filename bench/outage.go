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
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// outageFaults stops kube-apiserver for 20 s, 3 s into convergence (SIGTERM, SIGKILL if it has not
// ended 10 s later, then the same command line started again, as a control-plane upgrade restarts
// it), and, 5 s after it serves
// again, pauses etcd for 10 s (SIGSTOP, SIGCONT). The operator is not killed: it must ride both
// out by itself, without exiting.
func outageFaults(ctx context.Context, r *chaosRun) error {
	if err := sleep(ctx, 3*time.Second); err != nil {
		return err
	}
	apiserver, err := r.cp.pidOf(r.o.kubeBin, "kube-apiserver")
	if err != nil {
		return err
	}
	args, env, err := commandOf(apiserver)
	if err != nil {
		return err
	}
	// A graceful stop waits up to a minute for requests in flight; a control plane being
	// replaced does not always wait as long: SIGKILL after 10 s.
	stopped := time.Now()
	how := "stopped (SIGTERM)"
	if err := syscall.Kill(apiserver, syscall.SIGTERM); err != nil {
		return err
	}
	for processExists(apiserver) {
		if time.Since(stopped) > 10*time.Second && how != "killed (SIGKILL 10 s after SIGTERM)" {
			how = "killed (SIGKILL 10 s after SIGTERM)"
			_ = syscall.Kill(apiserver, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := sleep(ctx, 20*time.Second-time.Since(stopped)); err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(r.cp.dir, "kube-apiserver-restarted.log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start kube-apiserver again: %w", err)
	}
	r.cp.restarted = append(r.cp.restarted, cmd)
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := r.kc.Discovery().ServerVersion(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver does not serve a minute after its restart (log: %s)", log.Name())
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.notes = append(r.notes, fmt.Sprintf("kube-apiserver %s, serving again %s later", how, time.Since(stopped).Round(time.Second)))

	if err := sleep(ctx, 5*time.Second); err != nil {
		return err
	}
	etcd, err := r.cp.pidOf(r.o.kubeBin, "etcd")
	if err != nil {
		return err
	}
	if err := syscall.Kill(etcd, syscall.SIGSTOP); err != nil {
		return err
	}
	err = sleep(ctx, 10*time.Second)
	if cerr := syscall.Kill(etcd, syscall.SIGCONT); cerr != nil {
		return cerr
	}
	r.notes = append(r.notes, "etcd paused 10s")
	return err
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// pidOf finds the running process of one of the control plane's binaries.
func (cp *controlPlane) pidOf(kubeBin, binary string) (int, error) {
	procs, err := processesOf(kubeBin, binary)
	if err != nil {
		return 0, err
	}
	for pid := range procs {
		return pid, nil
	}
	return 0, fmt.Errorf("no %s process runs", binary)
}

// commandOf reads a process's command line and environment.
func commandOf(pid int) (args, env []string, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, nil, err
	}
	rawEnv, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return nil, nil, err
	}
	split := func(b []byte) []string {
		var out []string
		for _, f := range bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0}) {
			out = append(out, string(f))
		}
		return out
	}
	return split(raw), split(rawEnv), nil
}

func processExists(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}
