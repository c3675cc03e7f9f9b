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
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// restartDelay is how long a supervised process that ended stays down before it is started again.
// A kubelet restarts a container at once the first time and backs off after that (10 s, 20 s,
// ...); the chaos scenarios restart at once every time, to cut off as many operations as they can.
const restartDelay = 500 * time.Millisecond

// supervised is a process (an operator, kube-controller-manager) that is started again whenever
// it exits, as the kubelet restarts the container of a pod, until stop.
type supervised struct {
	command func() *exec.Cmd // a new command line of the same process (same ports and flags)
	log     *os.File

	mu       sync.Mutex
	cmd      *exec.Cmd
	restarts int
	spent    time.Duration // CPU of the processes that have ended
	stopping bool
	done     chan struct{}
}

func supervise(command func() *exec.Cmd, logPath string) (*supervised, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	s := &supervised{command: command, log: log, done: make(chan struct{})}
	s.mu.Lock()
	err = s.start()
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	go s.loop()
	return s, nil
}

// start starts the process; the caller holds s.mu.
func (s *supervised) start() error {
	cmd := s.command()
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	s.cmd = cmd
	return nil
}

func (s *supervised) loop() {
	defer close(s.done)
	for {
		s.mu.Lock()
		cmd := s.cmd
		s.mu.Unlock()
		_ = cmd.Wait()
		s.mu.Lock()
		if ps := cmd.ProcessState; ps != nil { // nil when the wait itself failed
			s.spent += ps.UserTime() + ps.SystemTime()
		}
		if s.stopping {
			s.mu.Unlock()
			return
		}
		s.restarts++
		s.mu.Unlock()
		time.Sleep(restartDelay)
		for {
			// Checked and started under one lock: a process retired or stopped meanwhile
			// is not started again.
			s.mu.Lock()
			if s.stopping {
				s.mu.Unlock()
				return
			}
			err := s.start()
			s.mu.Unlock()
			if err == nil {
				break
			}
			time.Sleep(time.Second)
		}
	}
}

// kill sends SIGKILL to the running process, as the kernel's OOM killer or a node failure would.
func (s *supervised) kill() { s.signal(syscall.SIGKILL) }

// signal sends sig to the running process.
func (s *supervised) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(sig)
	}
}

// retire lets the process run on but does not start it again when it ends (its pod is gone).
func (s *supervised) retire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopping = true
}

// exits is how many times the process has ended (and been started again) so far.
func (s *supervised) exits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// cpu is the CPU time of the processes that have ended so far.
func (s *supervised) cpu() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spent
}

// stop ends the process for good: SIGTERM, then SIGKILL after 20 s.
func (s *supervised) stop() {
	s.mu.Lock()
	s.stopping = true
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	s.mu.Unlock()
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		s.kill()
		<-s.done
	}
	_ = s.log.Close()
}
