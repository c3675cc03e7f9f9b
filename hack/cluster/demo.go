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
	"path/filepath"
	"strings"
	"time"
)

// demo shows the product working: on the current kube context if one is set and reachable, else
// on the local cluster, which it brings up. It deploys the operator with `make deploy`, applies
// both samples, waits for their pods and prints them.
type demo struct {
	c        *Cluster
	self     string
	repo     string
	img      string // operator image the current context can pull
	localImg string // operator image built and pushed when the demo runs on the local cluster
	env      []string
}

const demoNamespace = "default" // the tutorial applies the samples there

func (d *demo) run() error {
	local, err := d.chooseCluster()
	if err != nil {
		return err
	}
	memcachedImg := os.Getenv("MEMCACHED_IMG")
	if local {
		d.img = d.localImg
		d.env = append(d.env, "KUBECONFIG="+d.c.Kubeconfig(), "KUBECACHEDIR="+d.c.path("kubectl-cache"))
		if err := d.c.up(d.self); err != nil {
			return err
		}
		if err := d.make("e2e-images", "E2E_IMG="+d.img); err != nil {
			return err
		}
		b, err := os.ReadFile(d.c.path("memcached-image"))
		if err != nil {
			return err
		}
		memcachedImg = strings.TrimSpace(string(b))
	} else if d.img == "" {
		return fmt.Errorf("the current kube context is reachable, so the demo runs there: set IMG to an operator image that cluster can pull (and MEMCACHED_IMG to mirror memcached), or unset KUBECONFIG to use the local cluster")
	}

	// make deploy records the image in config/manager/kustomization.yaml; keep the tree clean.
	kustomization := filepath.Join(d.repo, "config", "manager", "kustomization.yaml")
	before, err := os.ReadFile(kustomization)
	if err != nil {
		return err
	}
	deployArgs := []string{"deploy", "IMG=" + d.img}
	if memcachedImg != "" {
		deployArgs = append(deployArgs, "MEMCACHED_IMG="+memcachedImg)
	}
	err = d.make(deployArgs...)
	if restoreErr := os.WriteFile(kustomization, before, 0o644); err == nil {
		err = restoreErr
	}
	if err != nil {
		return err
	}
	steps := [][]string{
		{"-n", "memcached-operator-system", "rollout", "status", "deployment/memcached-operator-controller-manager", "--timeout=3m"},
		{"-n", demoNamespace, "apply", "-f", "config/samples/cache_v1_memcached.yaml", "-f", "config/samples/cache_v1_memcachedbackup.yaml"},
		{"-n", demoNamespace, "wait", "memcached/memcached-sample", "--for=condition=Deployed", "--timeout=3m"},
	}
	for _, s := range steps {
		if err := d.kubectlShow(s...); err != nil {
			return err
		}
	}
	for _, w := range []struct{ selector, want string }{
		{"app.kubernetes.io/instance=memcached-sample", "3"},
		{"app.kubernetes.io/instance=memcachedbackup-sample", "2"},
	} {
		if err := waitFor(w.want+" Running pods "+w.selector, 3*time.Minute, func() error {
			out, err := d.kubectl("-n", demoNamespace, "get", "pods", "-l", w.selector, "--field-selector=status.phase=Running", "-o", "name")
			if err != nil {
				return err
			}
			if n := len(strings.Fields(out)); fmt.Sprint(n) != w.want {
				return fmt.Errorf("%d Running", n)
			}
			return nil
		}); err != nil {
			return err
		}
		if err := d.kubectlShow("-n", demoNamespace, "wait", "pod", "-l", w.selector, "--for=condition=Ready", "--timeout=3m"); err != nil {
			return err
		}
	}
	if err := d.kubectlShow("-n", demoNamespace, "wait", "memcachedbackup/memcachedbackup-sample", "--for=condition=Available", "--timeout=3m"); err != nil {
		return err
	}
	for _, s := range [][]string{
		{"-n", demoNamespace, "get", "pods", "-o", "wide"},
		{"-n", demoNamespace, "get", "memcached,memcachedbackup"},
		{"-n", demoNamespace, "get", "memcachedbackup", "memcachedbackup-sample", "-o", "jsonpath={.status.nodes}{\"\\n\"}"},
	} {
		if err := d.kubectlShow(s...); err != nil {
			return err
		}
	}
	if local {
		fmt.Printf("\nThe demo runs on the local cluster. Use it with:\n  export KUBECONFIG=%s PATH=%s:$PATH\nand stop it with: make demo-down\n", d.c.Kubeconfig(), d.c.BinDir)
	}
	return nil
}

// chooseCluster says whether the demo runs on the local cluster (true) or the current context.
func (d *demo) chooseCluster() (bool, error) {
	if _, ok := d.c.pid("kube-apiserver"); ok {
		return true, nil // a local cluster is up already
	}
	if os.Getenv("KUBECONFIG") != "" || fileExists(filepath.Join(os.Getenv("HOME"), ".kube", "config")) {
		if _, err := exec.Command(d.c.bin("kubectl"), "version", "--request-timeout=5s").CombinedOutput(); err == nil {
			logf("the current kube context is reachable: the demo runs there")
			return false, nil
		}
		logf("the current kube context is not reachable: the demo brings up the local cluster")
	}
	if os.Geteuid() != 0 {
		return false, fmt.Errorf("no reachable kube context, and the local cluster needs root: run `sudo make demo`, or point KUBECONFIG at a cluster and set IMG")
	}
	logf("bringing up the local cluster (this needs root: it runs containerd, the kubelet, CNI and kube-proxy)")
	return true, nil
}

// down undoes the demo: the samples, the operator, and the local cluster if it runs.
func (d *demo) down() error {
	local := false
	if _, ok := d.c.pid("kube-apiserver"); ok {
		local = true
		d.env = append(d.env, "KUBECONFIG="+d.c.Kubeconfig(), "KUBECACHEDIR="+d.c.path("kubectl-cache"))
	}
	_ = d.kubectlShow("-n", demoNamespace, "delete", "--ignore-not-found", "--timeout=2m",
		"-f", "config/samples/cache_v1_memcached.yaml", "-f", "config/samples/cache_v1_memcachedbackup.yaml")
	if err := d.make("undeploy", "ignore-not-found=true"); err != nil {
		return err
	}
	if local {
		return d.c.down()
	}
	return nil
}

func (d *demo) environ() []string {
	return append(append(os.Environ(), "PATH="+d.c.BinDir+":"+os.Getenv("PATH")), d.env...)
}

func (d *demo) make(args ...string) error {
	cmd := exec.Command("make", append([]string{"--no-print-directory"}, args...)...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = d.repo, d.environ(), os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("make %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

func (d *demo) kubectl(args ...string) (string, error) {
	cmd := exec.Command(d.c.bin("kubectl"), args...)
	cmd.Dir, cmd.Env = d.repo, d.environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (d *demo) kubectlShow(args ...string) error {
	fmt.Printf("$ kubectl %s\n", strings.Join(args, " "))
	out, err := d.kubectl(args...)
	fmt.Print(out)
	return err
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
