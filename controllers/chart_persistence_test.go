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

package controllers_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// The chart's memcached container with keepCacheAcross Restarts and persistence, run as its pod
// runs it (its shell, memcached's flags, the two directories) against the real memcached: a
// graceful stop leaves a copy on the volume that the next pod restores, once; a kill leaves none;
// a copy older than maxAgeSeconds, or of other settings, starts the server empty.
func TestPersistenceKeepsItemsAcrossPods(t *testing.T) {
	const maxAge = 2
	memcachedBin, err := exec.LookPath("memcached")
	if err != nil {
		t.Fatalf("memcached is a test dependency (hack/packages.txt, make test installs it): %v", err)
	}
	sts := &appsv1.StatefulSet{}
	renderedAs(t, renderChart(t, map[string]any{"keepCacheAcross": "Restarts", "memcached": map[string]any{"maxMemoryMB": 39},
		"persistence": map[string]any{"enabled": true, "maxAgeSeconds": maxAge}}), "StatefulSet", "", sts)
	if len(sts.Spec.VolumeClaimTemplates) != 1 || sts.Spec.VolumeClaimTemplates[0].Name != "memory-copy" {
		t.Fatalf("no volume claim template memory-copy in the StatefulSet: %+v", sts.Spec.VolumeClaimTemplates)
	}
	mc := sts.Spec.Template.Spec.Containers[0]
	if len(mc.Command) != 4 || mc.Command[0] != "sh" {
		t.Fatalf("memcached's command is not the chart's shell: %q", mc.Command)
	}
	volume := tempDir(t)
	p := &server{t: t, bin: filepath.Dir(memcachedBin), script: strings.ReplaceAll(mc.Command[2], "/var/lib/memcached", volume), args: mc.Args}

	first := p.start()
	first.store(300)
	first.stop(syscall.SIGTERM)
	if !strings.Contains(first.output(), "memory-copy: saved the items to the volume") {
		t.Fatalf("the graceful stop saved no copy:\n%s", first.output())
	}

	second := p.start() // a new pod: its memory-backed directory is empty
	if got := second.hits(300); got != 300 {
		t.Fatalf("the new pod restored %d of 300 keys:\n%s", got, second.output())
	}
	if !strings.Contains(second.output(), "memory-copy: restoring the items saved") {
		t.Errorf("the restore is not said:\n%s", second.output())
	}
	second.stop(syscall.SIGKILL) // killed: nothing saved

	third := p.start()
	if got := third.hits(300); got != 0 {
		t.Fatalf("after a kill the new pod read %d keys: the copy it restored once came back:\n%s", got, third.output())
	}
	third.store(300)
	third.stop(syscall.SIGTERM)
	time.Sleep((maxAge + 1) * time.Second)

	fourth := p.start()
	if got := fourth.hits(300); got != 0 {
		t.Fatalf("a copy older than %d s was restored (%d keys)", maxAge, got)
	}
	if !strings.Contains(fourth.output(), fmt.Sprintf("more than %d s", maxAge)) {
		t.Errorf("the stale copy is not said:\n%s", fourth.output())
	}
	fourth.store(300)
	fourth.stop(syscall.SIGTERM)

	p.args = slices.Clone(p.args)
	p.args[slices.Index(p.args, "-m")+1] = "40" // another item memory than the copy's
	fifth := p.start()
	if got := fifth.hits(300); got != 0 {
		t.Fatalf("memcached restored a copy of other settings (%d keys)", got)
	}
	fifth.store(1) // it runs, empty
	fifth.stop(syscall.SIGTERM)
}

// server runs the chart's memcached container, one pod after another: its shell script with the
// volume's directory in place, memcached's flags, and a memory-backed directory per pod.
type server struct {
	t           *testing.T
	bin, script string
	args        []string
}

// pod is one run of the container.
type pod struct {
	t    *testing.T
	cmd  *exec.Cmd
	addr string
	mu   sync.Mutex
	out  bytes.Buffer
}

func (p *pod) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

// start runs a new pod of the server: a new memory-backed directory, the same volume.
func (s *server) start() *pod {
	t := s.t
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	args := slices.Clone(s.args)
	args[slices.Index(args, "-p")+1] = strconv.Itoa(port)
	args = append(args, "-l", "127.0.0.1")
	n := &pod{t: t, addr: fmt.Sprintf("127.0.0.1:%d", port)}
	memoryDir := tempDir(t)
	script := strings.ReplaceAll(s.script, "/var/cache/memcached", memoryDir)
	for i := range args {
		args[i] = strings.ReplaceAll(args[i], "/var/cache/memcached", memoryDir)
	}
	n.cmd = exec.Command("sh", append([]string{"-c", script, "memcached"}, args...)...)
	n.cmd.Env = append(os.Environ(), "PATH="+s.bin+":"+os.Getenv("PATH"))
	n.cmd.Stdout, n.cmd.Stderr = n, n
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if os.Geteuid() == 0 {
		// As a pod runs it: the shell and memcached as one user, not root (which memcached refuses).
		n.cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL); _ = n.cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", n.addr, time.Second)
		if err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("memcached did not listen at %s: %v\n%s", n.addr, err, n.output())
		}
	}
	return n
}

func (p *pod) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *pod) store(n int) {
	p.t.Helper()
	c := memcache.New(p.addr)
	for i := range n {
		if err := c.Set(&memcache.Item{Key: fmt.Sprintf("key-%d", i), Value: []byte(fmt.Sprintf("value-%d", i))}); err != nil {
			p.t.Fatalf("set key-%d: %v", i, err)
		}
	}
}

func (p *pod) hits(n int) int {
	p.t.Helper()
	c, hits := memcache.New(p.addr), 0
	for i := range n {
		it, err := c.Get(fmt.Sprintf("key-%d", i))
		switch {
		case err == nil && string(it.Value) == fmt.Sprintf("value-%d", i):
			hits++
		case err != nil && err != memcache.ErrCacheMiss:
			p.t.Fatalf("get key-%d: %v", i, err)
		}
	}
	return hits
}

// stop stops the pod as Kubernetes does (SIGTERM to the container's process), or kills it whole.
func (p *pod) stop(sig syscall.Signal) {
	p.t.Helper()
	target := p.cmd.Process.Pid
	if sig == syscall.SIGKILL {
		target = -target
	}
	if err := syscall.Kill(target, sig); err != nil {
		p.t.Fatal(err)
	}
	err := p.cmd.Wait()
	if sig == syscall.SIGTERM && err != nil {
		p.t.Fatalf("the container ended with %v after a graceful stop:\n%s", err, p.output())
	}
}

// tempDir is a directory the container's user (nobody, when the test runs as root) can write.
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "memcached-pod-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// A volume's root is root's on most storage: the servers (user 11211) write their copy there as
// its group, which the chart gives the pod with persistence alone; on OpenShift the SCC gives it.
func TestPersistenceWritesTheVolumeAsItsGroup(t *testing.T) {
	for _, tc := range []struct {
		values    map[string]any
		openShift bool
		fsGroup   bool
	}{
		{map[string]any{"keepCacheAcross": "Restarts", "persistence": map[string]any{"enabled": true}}, false, true},
		{map[string]any{"keepCacheAcross": "Restarts", "persistence": map[string]any{"enabled": true}}, true, false},
		{map[string]any{"keepCacheAcross": "Restarts"}, false, false},
	} {
		var apiVersions []string
		if tc.openShift {
			apiVersions = []string{"security.openshift.io/v1"}
		}
		sts := &appsv1.StatefulSet{}
		renderedAs(t, renderChart(t, tc.values, apiVersions...), "StatefulSet", "", sts)
		sc := sts.Spec.Template.Spec.SecurityContext
		if got := sc.FSGroup != nil && *sc.FSGroup == 11211; got != tc.fsGroup {
			t.Errorf("%v (OpenShift %t): fsGroup %v, want 11211: %t", tc.values, tc.openShift, sc.FSGroup, tc.fsGroup)
		}
		if tc.fsGroup && (sc.FSGroupChangePolicy == nil || *sc.FSGroupChangePolicy != corev1.FSGroupChangeOnRootMismatch) {
			t.Errorf("%v: fsGroupChangePolicy %v, want OnRootMismatch (a restart does not walk the copy)", tc.values, sc.FSGroupChangePolicy)
		}
	}
}
