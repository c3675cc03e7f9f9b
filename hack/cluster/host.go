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
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Host changes the cluster makes outside its state folder, recorded on the first `up` so that
// `down` can put the machine back as it found it.
type hostState struct {
	Sysctls map[string]string `json:"sysctls"`
	// Paths that did not exist before the cluster created them.
	CreatedPaths []string `json:"createdPaths"`
}

// sysctls the cluster needs or the kubelet sets.
var touchedSysctls = []string{"net.ipv4.ip_forward", "net.bridge.bridge-nf-call-iptables", "vm.overcommit_memory", "kernel.panic", "kernel.panic_on_oops"}

// hostPaths that containerd, CNI and the kubelet create whatever their root folders are.
var hostPaths = []string{"/run/containerd", "/run/netns", "/var/run/netns", "/var/lib/cni", "/var/lib/kubelet", "/var/log/containers", "/var/log/pods", "/etc/cni", "/opt/cni"}

func sysctlFile(name string) string { return "/proc/sys/" + strings.ReplaceAll(name, ".", "/") }

func (c *Cluster) hostStateFile() string { return c.path("host-state.json") }

func (c *Cluster) recordHostState() error {
	if _, err := os.Stat(c.hostStateFile()); err == nil {
		return nil // recorded by the first up; later ups must not record the cluster's own changes
	}
	st := hostState{Sysctls: map[string]string{}}
	for _, s := range touchedSysctls {
		b, err := os.ReadFile(sysctlFile(s))
		if err != nil {
			return fmt.Errorf("read sysctl %s: %w", s, err)
		}
		st.Sysctls[s] = strings.TrimSpace(string(b))
	}
	for _, p := range hostPaths {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			st.CreatedPaths = append(st.CreatedPaths, p)
		}
	}
	b, _ := json.MarshalIndent(st, "", "  ")
	return os.WriteFile(c.hostStateFile(), b, 0o644)
}

func (c *Cluster) restoreHostState() error {
	b, err := os.ReadFile(c.hostStateFile())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var st hostState
	if err := json.Unmarshal(b, &st); err != nil {
		return err
	}
	var errs []error
	for name, v := range st.Sysctls {
		if err := os.WriteFile(sysctlFile(name), []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore sysctl %s=%s: %w", name, v, err))
		}
	}
	for _, p := range st.CreatedPaths {
		unmountUnder(p)
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

func setSysctl(name, value string) error {
	return os.WriteFile(sysctlFile(name), []byte(value), 0o644)
}

// unmountUnder unmounts every mount point at or below dir, deepest first.
func unmountUnder(dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := strings.ReplaceAll(fields[4], `\040`, " ")
		if mp == dir || strings.HasPrefix(mp, strings.TrimSuffix(dir, "/")+"/") {
			points = append(points, mp)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, mp := range points {
		if err := syscall.Unmount(mp, syscall.MNT_DETACH); err == nil {
			logf("unmounted %s", mp)
		}
	}
}

// cleanIptables removes the chains kube-proxy and the CNI plugins made, and the jumps to them.
func cleanIptables() { cleanIptablesChains(ours) }

// cleanIptablesChains removes the chains that mine names, and every rule that jumps to one, one
// command each: a save and restore of a whole table would race kube-proxy's own writes.
func cleanIptablesChains(mine func(chain string) bool) {
	for _, table := range []string{"filter", "nat", "mangle", "raw"} {
		out, err := exec.Command("iptables", "-w", "-t", table, "-S").Output()
		if err != nil {
			continue
		}
		var chains []string
		for _, line := range strings.Split(string(out), "\n") {
			fields := strings.Fields(line)
			switch {
			case len(fields) >= 2 && fields[0] == "-N" && mine(fields[1]):
				chains = append(chains, fields[1])
			case len(fields) >= 2 && fields[0] == "-A" && !mine(fields[1]) && jumpsTo(fields, mine):
				fields[0] = "-D"
				_ = exec.Command("iptables", append([]string{"-w", "-t", table}, unquote(fields)...)...).Run()
			}
		}
		for _, ch := range chains {
			_ = exec.Command("iptables", "-w", "-t", table, "-F", ch).Run()
		}
		for _, ch := range chains {
			if err := exec.Command("iptables", "-w", "-t", table, "-X", ch).Run(); err == nil {
				logf("removed iptables chain %s/%s", table, ch)
			}
		}
	}
}

func ours(chain string) bool {
	return strings.HasPrefix(chain, "KUBE-") || strings.HasPrefix(chain, "CNI-")
}

func jumpsTo(fields []string, mine func(string) bool) bool {
	for i, f := range fields {
		if (f == "-j" || f == "-g") && i+1 < len(fields) && mine(fields[i+1]) {
			return true
		}
	}
	return false
}

// unquote joins iptables -S fields that were quoted (comments with spaces).
func unquote(fields []string) []string {
	var out []string
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if strings.HasPrefix(f, `"`) && !(strings.HasSuffix(f, `"`) && len(f) > 1) {
			for i+1 < len(fields) {
				i++
				f += " " + fields[i]
				if strings.HasSuffix(fields[i], `"`) {
					break
				}
			}
		}
		out = append(out, strings.Trim(f, `"`))
	}
	return out
}

// cleanLinks removes the CNI bridge and the veths left on it.
func cleanLinks() {
	out, _ := exec.Command("ip", "-o", "link", "show", "master", bridgeName).Output()
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		name := strings.SplitN(strings.TrimSuffix(fields[1], ":"), "@", 2)[0]
		if exec.Command("ip", "link", "delete", name).Run() == nil {
			logf("removed link %s", name)
		}
	}
	if exec.Command("ip", "link", "show", bridgeName).Run() == nil {
		if err := exec.Command("ip", "link", "delete", bridgeName).Run(); err == nil {
			logf("removed bridge %s", bridgeName)
		}
	}
}

// cleanCgroups removes the cgroups the kubelet made (kubepods) in every cgroup v1 hierarchy.
func cleanCgroups() {
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods*")
	more, _ := filepath.Glob("/sys/fs/cgroup/kubepods*")
	for _, root := range append(dirs, more...) {
		var all []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				all = append(all, p)
			}
			return nil
		})
		sort.Slice(all, func(i, j int) bool { return len(all[i]) > len(all[j]) })
		for _, d := range all {
			_ = syscall.Rmdir(d)
		}
		if _, err := os.Stat(root); errors.Is(err, os.ErrNotExist) {
			logf("removed cgroup %s", root)
		}
	}
}

// killShims stops the containerd shims that serve this cluster's containerd, by PID.
func (c *Cluster) killShims() {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) == 0 || !strings.Contains(filepath.Base(args[0]), "containerd-shim") {
			continue
		}
		if strings.Contains(string(b), c.containerdSocket()) {
			var pid int
			fmt.Sscanf(strings.Split(p, "/")[2], "%d", &pid)
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				logf("stopped containerd shim (pid %d)", pid)
			}
		}
	}
}
