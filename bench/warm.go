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

// `bench warm` measures memcached's warm restart (keepCacheAcross Restarts) as the chart runs it:
// memcached with its memory file on a tmpfs, filled with items, stopped with SIGUSR1 (what the
// chart's shell sends on Kubernetes' stop), started again a second later (the chart's wait) with
// the same file; then how long from the stop until it serves its keys again, how many it kept,
// and how the memory counts the file (the process's anonymous and shared resident memory, the
// file's pages on the tmpfs); and a pod replaced with persistence, the chart's container run as
// two pods with a volume between them (warm_copy.go). It writes results/warm-restart.md.

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// warmCase is one measurement: memcached's item memory and the items stored in it.
type warmCase struct {
	itemMemoryMB int
	valueSize    int
	items        int
}

// warmResult is what one warm restart measured.
type warmResult struct {
	warmCase
	stored, restored    uint64
	save, wait, recover time.Duration
	keysChecked, hits   int
	// Memory right after the first start, before the stop and after the restart: the process's
	// resident anonymous and shared (file) memory, and the file's pages on the tmpfs.
	anonStart, shmemStart, fileStart    int64
	anonBefore, shmemBefore, fileBefore int64
	anonAfter, shmemAfter, fileAfter    int64
}

func warmMain(args []string) {
	fs := flag.NewFlagSet("warm", flag.ExitOnError)
	out := fs.String("out", "results", "folder of warm-restart.md")
	dir := fs.String("dir", "/dev/shm", "a tmpfs folder for memcached's memory file, as the pod's memory-backed emptyDir")
	port := fs.Int("port", 23311, "memcached's port on 127.0.0.1")
	helm := fs.String("helm", "../bin/helm", "the helm binary (renders the chart's memcached container)")
	chart := fs.String("chart", "../helm-charts/memcached", "the chart")
	kubeVersion := fs.String("kube-version", "v1.35.4", "the Kubernetes version the chart is rendered for")
	volumeDir := fs.String("volume-dir", os.TempDir(), "a folder on a disk, as a server's volume (persistence)")
	_ = fs.Parse(args)
	cases := []warmCase{
		// With its memory file memcached gives each slab class its pages from the start: of 64 MiB,
		// 1000-byte items (a 1184-byte chunk) get about 27 MiB.
		{itemMemoryMB: 64, valueSize: 1000, items: 20_000},
		{itemMemoryMB: 1024, valueSize: 1000, items: 800_000},
	}
	var results []warmResult
	for _, c := range cases {
		progress("warm restart: %d MiB of item memory, %d items of %d bytes", c.itemMemoryMB, c.items, c.valueSize)
		r, err := measureWarmRestart(c, *dir, *port)
		if err != nil {
			fail(fmt.Errorf("warm restart at %d MiB: %w", c.itemMemoryMB, err))
		}
		results = append(results, r)
	}
	var copies [][]copyResult
	for _, c := range cases {
		progress("a pod replaced with persistence: %d MiB of item memory, %d items of %d bytes", c.itemMemoryMB, c.items, c.valueSize)
		script, args, err := chartContainer(*helm, *chart, *kubeVersion, c.itemMemoryMB)
		if err != nil {
			fail(err)
		}
		var runs []copyResult
		for range copyRuns {
			r, err := measureCopyRestart(c, script, args, *dir, *volumeDir, *port)
			if err != nil {
				fail(fmt.Errorf("a pod replaced with persistence at %d MiB: %w", c.itemMemoryMB, err))
			}
			runs = append(runs, r)
		}
		copies = append(copies, runs)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fail(err)
	}
	path := filepath.Join(*out, "warm-restart.md")
	if err := os.WriteFile(path, []byte(warmReport(results)+copyReport(copies, *volumeDir)), 0o644); err != nil {
		fail(err)
	}
	progress("wrote %s", path)
}

func measureWarmRestart(c warmCase, tmpfs string, port int) (warmResult, error) {
	r := warmResult{warmCase: c}
	dir, err := os.MkdirTemp(tmpfs, "bench-warm-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "items")
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	start := func() (*exec.Cmd, error) {
		args := []string{"-l", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "0", "-m", strconv.Itoa(c.itemMemoryMB), "-e", file}
		if os.Geteuid() == 0 {
			args = append(args, "-u", "nobody")
			if err := os.Chmod(dir, 0o777); err != nil {
				return nil, err
			}
		}
		cmd := exec.Command("memcached", args...)
		return cmd, cmd.Start()
	}
	cmd, err := start()
	if err != nil {
		return r, fmt.Errorf("start memcached (apt-get install memcached): %w", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if _, err := awaitServing(addr, "", 10*time.Second); err != nil {
		return r, err
	}
	r.anonStart, r.shmemStart = residentMemory(cmd.Process.Pid)
	r.fileStart = fileBytes(file)
	if err := storeItems(addr, c.items, c.valueSize); err != nil {
		return r, err
	}
	if r.stored, err = currItems(addr); err != nil {
		return r, err
	}
	r.anonBefore, r.shmemBefore = residentMemory(cmd.Process.Pid)
	r.fileBefore = fileBytes(file)

	stopped := time.Now()
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		return r, err
	}
	if err := cmd.Wait(); err != nil {
		return r, fmt.Errorf("memcached's stop on SIGUSR1: %w", err)
	}
	r.save = time.Since(stopped)
	// The chart's shell waits a second before it starts memcached on a saved file: memcached
	// refuses one saved in the second it starts.
	time.Sleep(time.Second)
	r.wait = time.Since(stopped) - r.save
	started := time.Now()
	if cmd, err = start(); err != nil {
		return r, err
	}
	probe := fmt.Sprintf("k-%d", c.items-1) // the last item stored
	if _, err := awaitServing(addr, probe, 5*time.Minute); err != nil {
		return r, err
	}
	r.recover = time.Since(started)
	if r.restored, err = currItems(addr); err != nil {
		return r, err
	}
	r.keysChecked, r.hits, err = sampleKeys(addr, c.items, 1000)
	if err != nil {
		return r, err
	}
	r.anonAfter, r.shmemAfter = residentMemory(cmd.Process.Pid)
	r.fileAfter = fileBytes(file)
	return r, nil
}

// awaitServing waits until memcached at addr answers, and, with key, until it serves key.
func awaitServing(addr, key string, timeout time.Duration) (time.Duration, error) {
	begin := time.Now()
	for time.Since(begin) < timeout {
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			hit := key == ""
			if !hit {
				hits, err := getKeys(conn, []string{key})
				hit = err == nil && hits == 1
			}
			_ = conn.Close()
			if hit {
				return time.Since(begin), nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0, fmt.Errorf("memcached at %s did not serve %q within %s", addr, key, timeout)
}

// storeItems stores n items k-0 ... of size bytes, pipelined.
func storeItems(addr string, n, size int) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	w := bufio.NewWriterSize(conn, 1<<20)
	value := strings.Repeat("v", size)
	for i := range n {
		fmt.Fprintf(w, "set k-%d 0 0 %d noreply\r\n%s\r\n", i, size, value)
	}
	fmt.Fprintf(w, "mn\r\n") // the meta no-op answers once every set before it is done
	if err := w.Flush(); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "MN\r\n" {
		return fmt.Errorf("storing items: memcached answered %q", line)
	}
	return nil
}

// sampleKeys reads every (n/want)th key of k-0 ... k-(n-1) and counts the hits.
func sampleKeys(addr string, n, want int) (checked, hits int, err error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	var keys []string
	for i := 0; i < n; i += max(n/want, 1) {
		keys = append(keys, fmt.Sprintf("k-%d", i))
	}
	hits, err = getKeys(conn, keys)
	return len(keys), hits, err
}

// getKeys asks memcached for keys one get at a time and counts the hits.
func getKeys(conn net.Conn, keys []string) (int, error) {
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(conn)
	hits := 0
	for _, k := range keys {
		if _, err := fmt.Fprintf(conn, "get %s\r\n", k); err != nil {
			return hits, err
		}
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return hits, err
			}
			if line == "END\r\n" {
				break
			}
			if strings.HasPrefix(line, "VALUE ") {
				hits++
				if _, err := r.ReadString('\n'); err != nil {
					return hits, err
				}
			}
		}
	}
	return hits, nil
}

// currItems is memcached's curr_items.
func currItems(addr string) (uint64, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "stats\r\n"); err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[1] == "curr_items" {
			return strconv.ParseUint(f[2], 10, 64)
		}
		if f[0] == "END" {
			break
		}
	}
	return 0, errors.New("memcached's stats have no curr_items")
}

// residentMemory is a process's resident anonymous and shared (file and tmpfs) memory, in bytes.
func residentMemory(pid int) (anon, shmem int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1, -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "RssAnon:":
			anon = kb << 10
		case "RssShmem:":
			shmem = kb << 10
		}
	}
	return anon, shmem
}

// fileBytes are the bytes of a file's pages on its tmpfs (its blocks), not its size.
func fileBytes(path string) int64 {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return -1
	}
	return st.Blocks * 512
}

func warmReport(results []warmResult) string {
	mib := func(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
	var b strings.Builder
	fmt.Fprintf(&b, "# memcached's warm restart (keepCacheAcross Restarts)\n\n")
	fmt.Fprintf(&b, "`make bench-warm` (`bench warm`), %s: Debian's memcached %s with its memory file on a tmpfs (as the pod's memory-backed emptyDir), filled, stopped with SIGUSR1 (what the chart's shell sends on Kubernetes' stop), started again after the chart's one-second wait. A Kubernetes restart adds the preStop wait (5 s) before the stop and the readiness probe after the start.\n\n",
		time.Now().UTC().Format("2006-01-02"), memcachedVersion())
	fmt.Fprintf(&b, "| item memory | items stored | save (SIGUSR1 to exit) | the chart's wait | start to serving the last key | stop to serving, in all | items restored | sample read back |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %d MiB | %d × %d B | %s | %s | %s | %s | %d of %d | %d of %d |\n", r.itemMemoryMB, r.stored, r.valueSize,
			ms(r.save), ms(r.wait), ms(r.recover), ms(r.save+r.wait+r.recover), r.restored, r.stored, r.hits, r.keysChecked)
	}
	fmt.Fprintf(&b, "\nHow the memory counts the file: memcached maps the file as its item memory, so its pages are memcached's memory (shared, not anonymous), counted once, in the cgroup of the container that wrote them.\n\n")
	fmt.Fprintf(&b, "| item memory | at the first start: anonymous / shared resident / file pages on the tmpfs | filled, before the stop | after the restart |\n|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %d MiB | %s / %s / %s | %s / %s / %s | %s / %s / %s |\n", r.itemMemoryMB, mib(r.anonStart), mib(r.shmemStart), mib(r.fileStart),
			mib(r.anonBefore), mib(r.shmemBefore), mib(r.fileBefore), mib(r.anonAfter), mib(r.shmemAfter), mib(r.fileAfter))
	}
	return b.String()
}

func memcachedVersion() string {
	out, err := exec.Command("memcached", "-V").Output()
	if err != nil {
		return "(unknown version)"
	}
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "memcached ")
}
