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

package leader

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The lease against a real API server: who holds the lock is read as it is now, and a process
// whose pod no longer holds it stops, while an API server it cannot reach does not stop it.
func TestLease(t *testing.T) {
	g := NewWithT(t)
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS must name the folder of kube-apiserver and etcd: run the tests with `make test`")
	}
	env := &envtest.Environment{}
	cfg, err := env.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	cl, err := client.New(cfg, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()

	const ns = "default"
	pods := map[string]*corev1.Pod{}
	for _, name := range []string{"operator-a", "operator-b"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "manager"}}}}
		g.Expect(cl.Create(ctx, pod)).To(Succeed())
		pods[name] = pod
	}
	lock := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lock",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "operator-a", UID: pods["operator-a"].UID}}}}
	g.Expect(cl.Create(ctx, lock)).To(Succeed())
	lease := &Lease{client: cl, lock: types.NamespacedName{Namespace: ns, Name: "lock"}, pod: "operator-a", checkPeriod: 100 * time.Millisecond}

	t.Run("the holder may recover pending releases", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(lease.Holds(ctx)).To(Succeed())
		g.Expect(lease.MayRecover(ctx)).To(Succeed())
		g.Expect((*Lease)(nil).MayRecover(ctx)).To(Succeed(), "outside a cluster, the single instance may")
	})

	t.Run("after taking the lock over, not before the previous leader must have ended", func(t *testing.T) {
		g := NewWithT(t)
		took := *lease
		took.recoverAfter = time.Now().Add(time.Minute)
		g.Expect(took.MayRecover(ctx)).To(MatchError(ContainSubstring("took the leader lock over from another less than a grace period ago")))
	})

	t.Run("an unreachable API server does not stop the leader", func(t *testing.T) {
		g := NewWithT(t)
		unreachable := rest.CopyConfig(cfg)
		unreachable.Host = "https://127.0.0.1:1"
		ucl, err := client.New(unreachable, client.Options{})
		g.Expect(err).NotTo(HaveOccurred())
		cut := *lease
		cut.client = ucl
		err = cut.Holds(ctx)
		g.Expect(err).To(HaveOccurred())
		g.Expect(errors.Is(err, ErrLost)).To(BeFalse())
		g.Expect(startFor(&cut, time.Second)).To(Succeed(), "still running after 10 checks")
	})

	t.Run("the lock owned by another pod stops the process", func(t *testing.T) {
		g := NewWithT(t)
		done := make(chan error, 1)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() { done <- lease.Start(ctx) }()
		lock.OwnerReferences[0].Name, lock.OwnerReferences[0].UID = "operator-b", pods["operator-b"].UID
		g.Expect(cl.Update(ctx, lock)).To(Succeed())
		var err error
		g.Eventually(done, 5*time.Second).Should(Receive(&err))
		g.Expect(err).To(MatchError(ErrLost))
		g.Expect(err).To(MatchError(ContainSubstring(`belongs to pod "operator-b"`)))
		g.Expect(lease.MayRecover(ctx)).To(MatchError(ErrLost))
	})

	t.Run("the lock deleted stops the process", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(cl.Delete(ctx, lock)).To(Succeed())
		err := startFor(lease, 5*time.Second)
		g.Expect(err).To(MatchError(ErrLost))
		g.Expect(err).To(MatchError(ContainSubstring("is gone")))
	})
}

// startFor runs the lease's check loop for at most d and returns how it ended (nil: still running).
func startFor(l *Lease, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return l.Start(ctx)
}
