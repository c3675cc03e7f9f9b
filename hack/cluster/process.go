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
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// component is one process of the cluster, started detached and stopped by the PID it recorded.
type component struct {
	name string
	args []string // args[0] is the binary
	env  []string
}

func (c *Cluster) pidFile(name string) string { return c.path("run", name+".pid") }
func (c *Cluster) logFile(name string) string { return c.path("logs", name+".log") }

// pid returns the recorded PID of a component if that process still runs the same binary.
func (c *Cluster) pid(name string) (int, bool) {
	b, err := os.ReadFile(c.pidFile(name))
	if err != nil {
		return 0, false
	}
	fields := strings.SplitN(strings.TrimSpace(string(b)), " ", 2)
	pid, err := strconv.Atoi(fields[0])
	if err != nil || len(fields) != 2 {
		return 0, false
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil || strings.TrimSuffix(exe, " (deleted)") != fields[1] {
		return 0, false // gone, or the PID was reused by another program
	}
	return pid, true
}

// start runs a component in its own session so it outlives this command; a running one is kept.
func (c *Cluster) start(comp component) error {
	if pid, ok := c.pid(comp.name); ok {
		logf("%s already runs (pid %d)", comp.name, pid)
		return nil
	}
	exe, err := exec.LookPath(comp.args[0])
	if err != nil {
		return fmt.Errorf("%s: %w", comp.name, err)
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return err
	}
	if err := mkdirs(c.path("run"), c.path("logs")); err != nil {
		return err
	}
	logFile, err := os.OpenFile(c.logFile(comp.name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(exe, comp.args[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), comp.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", comp.name, err)
	}
	if err := os.WriteFile(c.pidFile(comp.name), []byte(fmt.Sprintf("%d %s\n", cmd.Process.Pid, exe)), 0o644); err != nil {
		return err
	}
	logf("started %s (pid %d, log %s)", comp.name, cmd.Process.Pid, c.logFile(comp.name))
	return cmd.Process.Release()
}

// stop ends a component by its recorded PID: SIGTERM, then SIGKILL after grace.
func (c *Cluster) stop(name string, grace time.Duration) error {
	pid, ok := c.pid(name)
	if !ok {
		_ = os.Remove(c.pidFile(name))
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s (pid %d): %w", name, pid, err)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if _, alive := c.pid(name); !alive {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, alive := c.pid(name); alive {
		logf("%s did not stop in %s: killing pid %d", name, grace, pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for i := 0; i < 50; i++ {
			if _, alive := c.pid(name); !alive {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	logf("stopped %s (pid %d)", name, pid)
	return os.Remove(c.pidFile(name))
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "cluster: "+format+"\n", args...)
}
