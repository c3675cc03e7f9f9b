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
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// up brings the cluster up, or finishes bringing it up: every step keeps what already runs.
func (c *Cluster) up(self string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the local cluster needs root: containerd, the kubelet, CNI and kube-proxy change network namespaces, mounts, cgroups and iptables")
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kubectl"} {
		if _, err := os.Stat(c.bin(b)); err != nil {
			return fmt.Errorf("%s is missing: run `make cluster-binaries`", c.bin(b))
		}
	}
	for _, tool := range []string{"containerd", "runc", "ctr", "iptables", "ip", "conntrack", "ipset"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not installed: run `make host-packages` as root (hack/packages.txt)", tool)
		}
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		return fmt.Errorf("the CNI plugins are not installed: apt-get install containernetworking-plugins")
	}
	if err := c.checkPorts(); err != nil {
		return err
	}
	if err := mkdirs(c.StateDir); err != nil {
		return err
	}
	if err := c.recordHostState(); err != nil {
		return err
	}
	if err := setSysctl("net.ipv4.ip_forward", "1"); err != nil {
		return err
	}
	// Pods on the bridge reach each other through netfilter, where NetworkPolicy is enforced.
	if err := setSysctl("net.bridge.bridge-nf-call-iptables", "1"); err != nil {
		return fmt.Errorf("%w (the kernel module br_netfilter is not loaded: modprobe br_netfilter)", err)
	}
	p, err := c.ensurePKI()
	if err != nil {
		return err
	}
	if err := c.writeKubeconfigs(p); err != nil {
		return err
	}
	if err := c.writeConfigs(p); err != nil {
		return err
	}

	if err := c.start(c.etcd()); err != nil {
		return err
	}
	if err := waitFor("etcd", 60*time.Second, func() error { return dial(fmt.Sprintf("127.0.0.1:%d", etcdClientPort)) }); err != nil {
		return c.explain("etcd", err)
	}
	if err := c.start(c.apiServer(p)); err != nil {
		return err
	}
	if err := waitFor("kube-apiserver", 120*time.Second, func() error { _, err := c.kubectl("get", "--raw", "/readyz"); return err }); err != nil {
		return c.explain("kube-apiserver", err)
	}
	for _, comp := range []component{c.controllerManager(p), c.scheduler(), c.registry(self, p), c.containerd()} {
		if err := c.start(comp); err != nil {
			return err
		}
	}
	if err := waitFor("registry", 30*time.Second, func() error { return dial(RegistryHost) }); err != nil {
		return c.explain("registry", err)
	}
	if err := waitFor("containerd", 60*time.Second, func() error { return dialUnix(c.containerdSocket()) }); err != nil {
		return c.explain("containerd", err)
	}
	if err := c.loadPause(self); err != nil {
		return err
	}
	for _, comp := range []component{c.kubelet(), c.kubeProxy()} {
		if err := c.start(comp); err != nil {
			return err
		}
	}
	if err := waitFor("node "+c.NodeName+" Ready", 180*time.Second, func() error {
		_, err := c.kubectl("wait", "node/"+c.NodeName, "--for=condition=Ready", "--timeout=5s")
		return err
	}); err != nil {
		return c.explain("kubelet", err)
	}
	if err := c.deployDNS(self); err != nil {
		return err
	}
	logf("cluster is up: export KUBECONFIG=%s", c.Kubeconfig())
	return nil
}

// components in start order; down stops them in reverse.
func (c *Cluster) componentNames() []string {
	return []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "registry", "containerd", "kubelet", "kube-proxy", "kube-router", "local-storage"}
}

// down stops everything up started, by PID, and undoes its changes to the host.
func (c *Cluster) down() error {
	if _, err := os.Stat(c.StateDir); os.IsNotExist(err) {
		fmt.Printf("cluster-down: nothing to do: no local cluster state in %s\n", c.StateDir)
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("tearing the local cluster down needs root")
	}
	// No new pods: stop the controllers and the scheduler, then remove every pod so the kubelet
	// tears down its containers and CNI releases its network.
	for _, name := range []string{"kube-controller-manager", "kube-scheduler"} {
		_ = c.stop(name, 10*time.Second)
	}
	_, apiUp := c.pid("kube-apiserver")
	_, kubeletUp := c.pid("kubelet")
	if apiUp && kubeletUp {
		if _, err := c.kubectl("delete", "pods", "--all", "--all-namespaces", "--grace-period=1", "--wait=false"); err == nil {
			_ = waitFor("pods to be removed", 90*time.Second, c.noPodsLeft)
		}
	}
	_ = c.stop("kubelet", 20*time.Second)
	c.removeContainers()
	_ = c.stop("kube-router", 10*time.Second)
	_ = c.stop("local-storage", 10*time.Second)
	_ = c.stop("kube-proxy", 10*time.Second)
	if _, err := os.Stat(c.bin("kube-proxy")); err == nil {
		_ = exec.Command(c.bin("kube-proxy"), "--cleanup", "--config="+c.path("kube-proxy", "config.yaml")).Run()
	}
	for _, name := range []string{"containerd", "registry", "kube-apiserver", "etcd"} {
		_ = c.stop(name, 20*time.Second)
	}
	c.killShims()
	cleanIptables()
	cleanIPSets()
	cleanLinks()
	unmountUnder(c.StateDir)
	unmountUnder("/run/containerd")
	unmountUnder("/run/netns")
	cleanCgroups()
	err := c.restoreHostState()
	if rmErr := os.RemoveAll(c.StateDir); rmErr != nil {
		err = fmt.Errorf("remove %s: %w (%v)", c.StateDir, rmErr, err)
	}
	if err == nil {
		logf("cluster is down; the state folder %s is removed", c.StateDir)
	}
	return err
}

// anyRunning says whether a process of the cluster still runs.
func (c *Cluster) anyRunning() bool {
	for _, name := range c.componentNames() {
		if _, ok := c.pid(name); ok {
			return true
		}
	}
	return false
}

// noPodsLeft is nil once containerd runs no pod sandbox any more.
func (c *Cluster) noPodsLeft() error {
	out, err := exec.Command("ctr", "--address", c.containerdSocket(), "-n", "k8s.io", "tasks", "ls", "-q").Output()
	if err != nil {
		return nil // containerd is gone: nothing runs
	}
	if n := len(strings.Fields(string(out))); n > 0 {
		return fmt.Errorf("%d containers still run", n)
	}
	return nil
}

// removeContainers kills and deletes what the kubelet left in containerd.
func (c *Cluster) removeContainers() {
	ctr := func(args ...string) []string {
		out, err := exec.Command("ctr", append([]string{"--address", c.containerdSocket(), "-n", "k8s.io"}, args...)...).Output()
		if err != nil {
			return nil
		}
		return strings.Fields(string(out))
	}
	for _, id := range ctr("tasks", "ls", "-q") {
		ctr("tasks", "kill", "-s", "SIGKILL", id)
		time.Sleep(200 * time.Millisecond)
		ctr("tasks", "delete", "-f", id)
	}
	for _, id := range ctr("containers", "ls", "-q") {
		ctr("containers", "delete", id)
	}
}

func (c *Cluster) status() error {
	fmt.Printf("state folder: %s\n", c.StateDir)
	running := 0
	for _, name := range c.componentNames() {
		if pid, ok := c.pid(name); ok {
			fmt.Printf("  %-24s running (pid %d)\n", name, pid)
			running++
		} else {
			fmt.Printf("  %-24s stopped\n", name)
		}
	}
	if _, ok := c.pid("kube-apiserver"); ok {
		if out, err := c.kubectl("get", "nodes", "-o", "wide"); err == nil {
			fmt.Print(out)
		}
		fmt.Printf("export KUBECONFIG=%s\n", c.Kubeconfig())
	}
	if running == 0 {
		fmt.Println("the cluster is down")
	}
	return nil
}

// checkPorts fails early, and clearly, when a port the cluster needs is taken by another program.
func (c *Cluster) checkPorts() error {
	ports := map[int]string{etcdClientPort: "etcd", etcdPeerPort: "etcd", apiServerPort: "kube-apiserver",
		kubeletPort: "kubelet", RegistryPort: "registry", 10257: "kube-controller-manager", 10259: "kube-scheduler",
		10249: "kube-proxy", 10256: "kube-proxy", 10248: "kubelet", kubeRouterHealthPort: "kube-router", localStorageMetricsPort: "local-storage"}
	for port, owner := range ports {
		if _, ok := c.pid(owner); ok {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
		if err != nil {
			return fmt.Errorf("port %d, which %s needs, is taken by another program (%v)", port, owner, err)
		}
		l.Close()
	}
	return nil
}

func (c *Cluster) kubectl(args ...string) (string, error) {
	out, err := exec.Command(c.bin("kubectl"), append([]string{"--kubeconfig=" + c.Kubeconfig(), "--cache-dir=" + c.path("kubectl-cache")}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// explain adds the end of a component's log to an error.
func (c *Cluster) explain(name string, err error) error {
	b, _ := os.ReadFile(c.logFile(name))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return fmt.Errorf("%s: %w\nlast lines of %s:\n%s", name, err, c.logFile(name), strings.Join(lines, "\n"))
}

func waitFor(what string, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = check(); err == nil {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("waited %s for %s: %w", timeout, what, err)
}

func dial(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		conn.Close()
	}
	return err
}

func dialUnix(path string) error {
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		conn.Close()
	}
	return err
}

// helper returns a binary built beside this program (make cluster-tool builds them together).
func helper(self, name string) string { return filepath.Join(filepath.Dir(self), name) }

func (c *Cluster) loadPause(self string) error {
	img, err := binaryImage(helper(self, "pause"), "/pause", "65535", "")
	if err != nil {
		return fmt.Errorf("pause image: %w", err)
	}
	return c.load(img, pauseImage)
}
