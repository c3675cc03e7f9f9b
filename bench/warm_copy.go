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

// A pod replaced with spec.persistence (a drain, an eviction): the chart's memcached container as
// it renders, its shell and memcached's flags, run twice, as two pods of one server: a memory-backed
// directory each, one volume folder on the machine's disk between them. The first is filled and
// stopped as Kubernetes stops it (SIGTERM): memcached saves, the shell copies the file to the
// volume; the second restores the copy. Measured: the save, the copy, so the grace period a stop
// needs, and the new pod's start to serving its last key (the copy read back, the chart's wait,
// memcached's restore).

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// The chart's folders that the bench puts elsewhere: the pod's memory-backed emptyDir and the
// server's volume (memcached.memoryDir and memcached.copyDir in the chart's helpers).
const chartMemoryDir, chartCopyDir = "/var/cache/memcached", "/var/lib/memcached"

// preStopWait is the chart's preStop sleep: it counts in the grace period, before the stop signal.
const preStopWait = 5 * time.Second

// copyRuns is how many times each size is measured: a disk's write speed varies from run to run.
const copyRuns = 3

// defaultGracePeriod is Kubernetes' terminationGracePeriodSeconds, which the chart keeps.
const defaultGracePeriod = 30 * time.Second

type copyResult struct {
	warmCase
	stored, restored uint64
	// save: the stop signal to memcached's exit; copyOut: its exit to the container's, the copy
	// written and synced; start: the new container's start to serving the last key stored.
	save, copyOut, start time.Duration
	copyBytes            int64
	coldRead             bool
	keysChecked, hits    int
}

// chartContainer renders the chart with persistence at itemMemoryMB and returns the memcached
// container's shell script and memcached's flags.
func chartContainer(helm, chart, kubeVersion string, itemMemoryMB int) (script string, args []string, err error) {
	out, err := exec.Command(helm, "template", "bench", chart, "--kube-version", kubeVersion,
		"--set", "keepCacheAcross=Restarts", "--set", "persistence.enabled=true",
		"--set", "memcached.maxMemoryMB="+strconv.Itoa(itemMemoryMB)).Output()
	if err != nil {
		return "", nil, fmt.Errorf("helm template %s: %w", chart, err)
	}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var sts appsv1.StatefulSet
		if yaml.Unmarshal([]byte(doc), &sts) != nil || sts.Kind != "StatefulSet" {
			continue
		}
		c := sts.Spec.Template.Spec.Containers[0]
		if len(c.Command) != 4 || c.Command[0] != "sh" {
			return "", nil, fmt.Errorf("the chart's memcached command is not its shell: %q", c.Command)
		}
		return c.Command[2], c.Args, nil
	}
	return "", nil, fmt.Errorf("helm template %s: no StatefulSet", chart)
}

// containerRun is one run of the chart's container: the shell, memcached its child.
type containerRun struct {
	cmd    *exec.Cmd
	memDir string
	mu     sync.Mutex
	out    bytes.Buffer
}

func (r *containerRun) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.Write(b)
}

func (r *containerRun) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// startContainer runs the container with a new memory-backed folder under memoryRoot and volume as
// the server's volume, memcached on 127.0.0.1:port, as the pod's user (nobody here) when root.
func startContainer(script string, args []string, memoryRoot, volume string, port int) (*containerRun, error) {
	memDir, err := os.MkdirTemp(memoryRoot, "bench-pod-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(memDir, 0o777); err != nil {
		return nil, err
	}
	args = slices.Clone(args)
	for i := range args {
		args[i] = strings.ReplaceAll(args[i], chartMemoryDir, memDir)
	}
	args[slices.Index(args, "-p")+1] = strconv.Itoa(port)
	args = append(args, "-l", "127.0.0.1")
	script = strings.NewReplacer(chartMemoryDir, memDir, chartCopyDir, volume).Replace(script)
	r := &containerRun{memDir: memDir}
	r.cmd = exec.Command("sh", append([]string{"-c", script, "memcached"}, args...)...)
	r.cmd.Stdout, r.cmd.Stderr = r, r
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if os.Geteuid() == 0 {
		r.cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534} // memcached refuses root
	}
	return r, r.cmd.Start()
}

// kill ends the run whole (its process group) and removes its memory-backed folder.
func (r *containerRun) kill() {
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	_ = r.cmd.Wait()
	_ = os.RemoveAll(r.memDir)
}

// memcachedPID is the shell's child, memcached, once it runs.
func (r *containerRun) memcachedPID() (int, error) {
	sh := r.cmd.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", sh, sh))
		if err != nil {
			return 0, err
		}
		for _, child := range strings.Fields(string(b)) { // also rm, sed... before memcached runs
			comm, _ := os.ReadFile("/proc/" + child + "/comm")
			if strings.TrimSpace(string(comm)) == "memcached" {
				return strconv.Atoi(child)
			}
		}
	}
	return 0, fmt.Errorf("the container's shell started no memcached:\n%s", r.output())
}

// exited says whether a process has ended (gone, or a zombie its parent has not reaped yet).
func exited(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the state follows the command's name in parentheses
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z'
}

func measureCopyRestart(c warmCase, script string, args []string, memoryRoot, volumeRoot string, port int) (copyResult, error) {
	r := copyResult{warmCase: c}
	volume, err := os.MkdirTemp(volumeRoot, "bench-volume-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(volume)
	if err := os.Chmod(volume, 0o777); err != nil {
		return r, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	first, err := startContainer(script, args, memoryRoot, volume, port)
	if err != nil {
		return r, fmt.Errorf("start the container (apt-get install memcached): %w", err)
	}
	defer first.kill()
	pid, err := first.memcachedPID()
	if err != nil {
		return r, err
	}
	if _, err := awaitServing(addr, "", 10*time.Second); err != nil {
		return r, fmt.Errorf("%w\n%s", err, first.output())
	}
	if err := storeItems(addr, c.items, c.valueSize); err != nil {
		return r, err
	}
	if r.stored, err = currItems(addr); err != nil {
		return r, err
	}

	stopped := time.Now()
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return r, err
	}
	for !exited(pid) {
		time.Sleep(2 * time.Millisecond)
	}
	r.save = time.Since(stopped)
	if err := first.cmd.Wait(); err != nil {
		return r, fmt.Errorf("the container's graceful stop: %w\n%s", err, first.output())
	}
	r.copyOut = time.Since(stopped) - r.save
	if !strings.Contains(first.output(), "memory-copy: saved the items to the volume") {
		return r, fmt.Errorf("the graceful stop left no copy on the volume:\n%s", first.output())
	}
	if st, err := os.Stat(filepath.Join(volume, "items")); err == nil {
		r.copyBytes = st.Size()
	}
	first.kill() // the old pod's memory-backed folder goes with it
	// The new pod reads its copy from the disk, not from the page cache the copy filled.
	syscall.Sync()
	r.coldRead = os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0o200) == nil

	started := time.Now()
	second, err := startContainer(script, args, memoryRoot, volume, port)
	if err != nil {
		return r, err
	}
	defer second.kill()
	if _, err := awaitServing(addr, fmt.Sprintf("k-%d", c.items-1), 5*time.Minute); err != nil {
		return r, fmt.Errorf("%w\n%s", err, second.output())
	}
	r.start = time.Since(started)
	if !strings.Contains(second.output(), "memory-copy: restoring the items saved") {
		return r, fmt.Errorf("the new pod did not say it restored the copy:\n%s", second.output())
	}
	if r.restored, err = currItems(addr); err != nil {
		return r, err
	}
	r.keysChecked, r.hits, err = sampleKeys(addr, c.items, 1000)
	return r, err
}

// median is the run of the median stop-to-serving time.
func median(runs []copyResult) copyResult {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b copyResult) int { return cmp.Compare(a.save+a.copyOut+a.start, b.save+b.copyOut+b.start) })
	return sorted[len(sorted)/2]
}

// gracePeriod is the longest stop of the runs: what the grace period must cover.
func gracePeriod(runs []copyResult) time.Duration {
	var longest time.Duration
	for _, r := range runs {
		longest = max(longest, preStopWait+r.save+r.copyOut)
	}
	return longest
}

func copyReport(sizes [][]copyResult, volumeRoot string) string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
	s := func(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
	var b strings.Builder
	fmt.Fprintf(&b, "\n## A pod replaced with `persistence` (a drain, an eviction)\n\n")
	fmt.Fprintf(&b, "The chart's memcached container as it renders (its shell and memcached's flags), run as two pods of one server: a folder on a tmpfs each (the memory-backed emptyDir), one volume folder on this machine's disk (%s) between them. The first is filled and stopped with SIGTERM, as Kubernetes stops it after the preStop wait: memcached saves, the shell copies the file and its metadata to the volume and syncs. The second starts on an empty folder and restores the copy", volumeRoot)
	if len(sizes) > 0 && sizes[0][0].coldRead {
		fmt.Fprintf(&b, ", read from the disk (the page cache dropped before it starts)")
	}
	fmt.Fprintf(&b, ". Not counted: the pod's scheduling and image, the readiness probe. The run of the median stop to serving of %d, and the longest stop of the %d.\n\n", copyRuns, copyRuns)
	fmt.Fprintf(&b, "| item memory | items stored | save (SIGTERM to memcached's exit) | copy to the volume | new pod: start to serving the last key (copy read back, the chart's wait, restore) | stop to serving, in all | grace period it needs (preStop %s + save + copy, the longest run) | copy on the volume | items restored | sample read back |\n|---|---|---|---|---|---|---|---|---|---|\n", s(preStopWait))
	for _, runs := range sizes {
		r := median(runs)
		fmt.Fprintf(&b, "| %d MiB | %d × %d B | %s | %s | %s | **%s** | **%s** | %d MiB | %d of %d | %d of %d |\n", r.itemMemoryMB, r.stored, r.valueSize,
			ms(r.save), ms(r.copyOut), ms(r.start), s(r.save+r.copyOut+r.start), s(gracePeriod(runs)), r.copyBytes>>20, r.restored, r.stored, r.hits, r.keysChecked)
	}
	fmt.Fprintln(&b)
	for _, runs := range sizes {
		r, need := median(runs), gracePeriod(runs)
		verdict := "within"
		if need > defaultGracePeriod {
			verdict = "**beyond**"
		}
		fmt.Fprintf(&b, "At %d MiB a stop needs up to %s, %s Kubernetes' default grace period (%s); the copy wrote %.0f MiB/s. ", r.itemMemoryMB, s(need), verdict, s(defaultGracePeriod),
			float64(r.copyBytes)/(1<<20)/r.copyOut.Seconds())
	}
	fmt.Fprintf(&b, "A volume that writes slower needs (item memory ÷ its write speed) for the copy: keep the item memory small enough for the grace period (docs/upgrades.md). A copy cut short is never restored.\n")
	return b.String()
}
