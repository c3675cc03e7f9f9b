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
	"regexp"
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

// The restore decision of the chart's memcached container with keepCacheAcross Restarts and
// persistence, run as its pods run it (its shell, memcached's flags, a memory-backed folder per
// pod, one volume between them) against the real memcached, as a table of what happened to the
// copy between two pods of a server. Every row starts from a copy the server restored once
// (generation "old"), then stores generation "new" and stops: nothing of "old" may come back, a
// copy is restored at most once.
func TestPersistenceRestoreDecision(t *testing.T) {
	const maxAge, keys = 60, 300
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
	memcachedBin, err := exec.LookPath("memcached")
	if err != nil {
		t.Fatalf("memcached is a test dependency (hack/packages.txt, make test installs it): %v", err)
	}
	for _, tc := range []struct {
		name string
		stop syscall.Signal // how the server's pod stops
		// copy does to the volume what happened between the pods; flags are the new pod's
		// memcached flags that differ from the old one's.
		copy     func(t *testing.T, volume string)
		flags    map[string]string
		restored bool
		// said is in the container's log (a regular expression): the shell's memory-copy line, or
		// memcached's own. A copy's age is counted when the new pod starts: a second or two later
		// on a busy machine.
		said string
	}{
		{name: "a graceful stop, back at once", stop: syscall.SIGTERM, restored: true, said: `memory-copy: restoring the items saved`},
		{name: "a copy younger than maxAgeSeconds", stop: syscall.SIGTERM, copy: agedBy(maxAge - 10), restored: true, said: `restoring the items saved 5[0-5] s ago`},
		{name: "a copy older than maxAgeSeconds", stop: syscall.SIGTERM, copy: agedBy(maxAge + 10), said: `saved 7[0-5] s ago, more than 60 s`},
		{name: "a copy cut short by the end of the grace period", stop: syscall.SIGTERM, copy: cutShort, said: `the copy on the volume is incomplete`},
		{name: "killed: memcached saved nothing", stop: syscall.SIGKILL, said: `the volume holds no copy`},
		{name: "other item memory (-m)", stop: syscall.SIGTERM, flags: map[string]string{"-m": "40"}, said: `incompatible due to setting for \[maxbytes\]`},
		{name: "other item size (-I)", stop: syscall.SIGTERM, flags: map[string]string{"-I": "2m"}, said: `incompatible due to setting for \[item_size_max\]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			volume := tempDir(t)
			p := &server{t: t, bin: filepath.Dir(memcachedBin), script: strings.ReplaceAll(mc.Command[2], "/var/lib/memcached", volume), args: mc.Args}
			seed := p.start()
			seed.store(keys, "old")
			seed.stop(syscall.SIGTERM)
			old := p.start()
			if got := old.hits(keys, "old"); got != keys {
				t.Fatalf("the seed's copy: %d of %d keys restored:\n%s", got, keys, old.output())
			}
			old.store(keys, "new")
			old.stop(tc.stop)
			if tc.copy != nil {
				tc.copy(t, volume)
			}
			for flag, value := range tc.flags {
				p.args = slices.Clone(p.args)
				p.args[slices.Index(p.args, flag)+1] = value
			}
			next := p.start()
			want := 0
			if tc.restored {
				want = keys
			}
			if got := next.hits(keys, "new"); got != want {
				t.Errorf("the new pod read %d of %d keys back, want %d:\n%s", got, keys, want, next.output())
			}
			if got := next.hits(keys, "old"); got != 0 {
				t.Errorf("the new pod read %d keys of the copy restored before", got)
			}
			if !regexp.MustCompile(tc.said).MatchString(next.output()) {
				t.Errorf("the log does not say %q:\n%s", tc.said, next.output())
			}
			next.store(1, "next") // it runs, and serves
		})
	}
}

// agedBy makes the copy on the volume seconds older: memcached's stop time in its metadata.
func agedBy(seconds int) func(t *testing.T, volume string) {
	return func(t *testing.T, volume string) {
		meta := filepath.Join(volume, "items.meta")
		b, err := os.ReadFile(meta)
		if err != nil {
			t.Fatalf("no complete copy on the volume: %v", err)
		}
		lines := strings.Split(string(b), "\n")
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "Kstop_time ") })
		if i < 0 {
			t.Fatalf("no stop_time in memcached's metadata:\n%s", b)
		}
		stop, err := strconv.ParseInt(strings.TrimPrefix(lines[i], "Kstop_time "), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = fmt.Sprintf("Kstop_time %d", stop-int64(seconds))
		if err := os.WriteFile(meta, []byte(strings.Join(lines, "\n")), 0o666); err != nil {
			t.Fatal(err)
		}
	}
}

// cutShort leaves the copy as a stop ended before its last step: the metadata not yet in place.
func cutShort(t *testing.T, volume string) {
	meta := filepath.Join(volume, "items.meta")
	if err := os.Rename(meta, meta+".part"); err != nil {
		t.Fatalf("no complete copy on the volume: %v", err)
	}
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

// store sets key-0 ... to values of a generation.
func (p *pod) store(n int, generation string) {
	p.t.Helper()
	c := memcache.New(p.addr)
	for i := range n {
		if err := c.Set(&memcache.Item{Key: fmt.Sprintf("key-%d", i), Value: []byte(fmt.Sprintf("%s-%d", generation, i))}); err != nil {
			p.t.Fatalf("set key-%d: %v", i, err)
		}
	}
}

// hits counts the keys of key-0 ... that hold their value of a generation.
func (p *pod) hits(n int, generation string) int {
	p.t.Helper()
	c, hits := memcache.New(p.addr), 0
	for i := range n {
		it, err := c.Get(fmt.Sprintf("key-%d", i))
		switch {
		case err == nil && string(it.Value) == fmt.Sprintf("%s-%d", generation, i):
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
