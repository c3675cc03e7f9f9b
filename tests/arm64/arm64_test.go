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

// Package arm64 runs the linux/arm64 manager of the operator image on this machine, under QEMU's
// user-mode emulation (Debian's qemu-user-static), against a real API server (envtest): it must
// reconcile both APIs as the amd64 one does. make test-artifacts builds that manager
// ($MANAGER_ARM64) as make image-build does, and runs this.
package arm64

import (
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// qemu is Debian's qemu-user-static emulator of arm64 (hack/packages.txt): it runs an arm64
// binary when called with it, without binfmt_misc.
const qemu = "/usr/bin/qemu-aarch64-static"

func TestArm64ManagerReconcilesBothAPIs(t *testing.T) {
	g := NewWithT(t)
	manager := os.Getenv("MANAGER_ARM64")
	if manager == "" || os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("MANAGER_ARM64 (the arm64 manager) and KUBEBUILDER_ASSETS must be set: run the tests with `make test-artifacts`")
	}
	f, err := elf.Open(manager)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Machine).To(Equal(elf.EM_AARCH64), "%s is an arm64 binary", manager)
	_ = f.Close()
	if _, err := os.Stat(qemu); err != nil {
		t.Fatalf("%s: apt-get install qemu-user-static (hack/packages.txt)", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	g.Expect(err).NotTo(HaveOccurred())

	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	admin, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := admin.KubeConfig()
	g.Expect(err).NotTo(HaveOccurred())
	kubeconfigFile := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(kubeconfigFile, kubeconfig, 0o600)).To(Succeed())
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(cachev1.AddToScheme(scheme)).To(Succeed())
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())

	// Out of a cluster, as `make run`: the manager says it skips leader election and reconciles.
	cmd := exec.Command(qemu, manager, "--kubeconfig="+kubeconfigFile, "--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0")
	cmd.Dir = root // watches.yaml names the chart relative to the working directory
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	g.Expect(cmd.Start()).To(Succeed())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	ctx := context.Background()
	const ns = "default"
	g.Expect(c.Create(ctx, &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "on-arm64"},
		Spec: cachev1.MemcachedSpec{ReplicaCount: ptr.To[int32](2)}})).To(Succeed())
	g.Expect(c.Create(ctx, &cachev1.MemcachedBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backup-on-arm64"},
		Spec: cachev1.MemcachedBackupSpec{Size: 2}})).To(Succeed())

	// Emulated, the manager starts and renders more slowly than natively: minutes, not seconds.
	const timeout = 4 * time.Minute
	g.Eventually(func(g Gomega) {
		mc := &cachev1.Memcached{}
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "on-arm64"}, mc)).To(Succeed())
		deployed := meta.FindStatusCondition(helmConditions(mc), "Deployed")
		g.Expect(deployed).NotTo(BeNil())
		g.Expect(deployed.Status).To(Equal(metav1.ConditionTrue), deployed.Message)
	}, timeout, time.Second).Should(Succeed(), "the Helm side installed the release")
	g.Eventually(func(g Gomega) *int32 {
		list := &appsv1.StatefulSetList{}
		g.Expect(c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": "on-arm64"})).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
		return list.Items[0].Spec.Replicas
	}, timeout, time.Second).Should(HaveValue(BeEquivalentTo(2)), "the chart's StatefulSet of 2 servers")
	g.Eventually(func(g Gomega) *int32 {
		d := &appsv1.Deployment{}
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "backup-on-arm64"}, d)).To(Succeed())
		return d.Spec.Replicas
	}, timeout, time.Second).Should(HaveValue(BeEquivalentTo(2)), "the Go side made the backup's Deployment")
	g.Eventually(func(g Gomega) []metav1.Condition {
		b := &cachev1.MemcachedBackup{}
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "backup-on-arm64"}, b)).To(Succeed())
		return b.Status.Conditions
	}, timeout, time.Second).ShouldNot(BeEmpty(), "and reports its status")
}

// helmConditions are a Memcached's conditions as metav1 conditions.
func helmConditions(mc *cachev1.Memcached) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range mc.Status.Conditions {
		out = append(out, metav1.Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
	}
	return out
}
