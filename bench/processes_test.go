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
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The chaos scenarios stop and pause the control plane's processes by binary: a process of the
// same binary that the bench did not start (the local cluster's kube-apiserver, which CI runs
// beside make chaos) is not the bench's. It once was: the outage scenario stopped the cluster's
// kube-apiserver, and the e2e suite beside it failed.
func TestProcessesOfListsOnlyTheBenchsOwn(t *testing.T) {
	sleep, err := filepath.EvalSymlinks("/bin/sleep") // /usr/bin/sleep where /bin is a link
	if err != nil {
		t.Fatal(err)
	}
	dir, binary := filepath.Dir(sleep), filepath.Base(sleep)

	own := exec.Command(sleep, "60")
	if err := own.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.Process.Kill(); _ = own.Wait() })
	// Another's: a sleep whose parent is a shell, in a process group of its own.
	other := exec.Command("/bin/sh", "-c", sleep+" 60 & wait")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-other.Process.Pid, syscall.SIGKILL); _ = other.Wait() })
	othersSleep := 0
	for deadline := time.Now().Add(10 * time.Second); othersSleep == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the shell's sleep did not start")
		}
		children, _ := exec.Command("pgrep", "-P", strconv.Itoa(other.Process.Pid)).Output()
		othersSleep, _ = strconv.Atoi(strings.TrimSpace(string(children)))
	}

	procs, err := processesOf(dir, binary)
	if err != nil {
		t.Fatal(err)
	}
	if procs[own.Process.Pid] != binary {
		t.Errorf("the bench's own %s (pid %d) is not listed: %v", binary, own.Process.Pid, procs)
	}
	if _, ok := procs[othersSleep]; ok {
		t.Errorf("another's %s (pid %d, started by a shell) is listed as the bench's: %v", binary, othersSleep, procs)
	}
	if len(procs) != 1 {
		t.Errorf("want the bench's own %s alone, got %v", binary, procs)
	}
}
