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

// Package leader is leader for life (operator-lib's leader.Become: a lock ConfigMap owned by the
// leader's pod) with what it lacks when two processes act at once. That happens when the lock
// goes while its holder still runs: its pod force-deleted, the lock taken from a pod on a
// NotReady node, the lock deleted by hand. Then
//   - the new leader may find releases left pending by the old one, which may still be working on
//     them: it recovers them only once the old process must have ended (its pod's termination
//     grace period after the take-over), and
//   - the old process must stop: it checks that it still holds the lock before it recovers a
//     release and every few seconds, and ends when it does not.
package leader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/operator-framework/operator-lib/leader"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// podNameEnv names this process's pod (the downward API sets it), as leader for life requires.
const podNameEnv = "POD_NAME"

// namespaceFile holds the pod's namespace, where leader for life keeps its lock.
const namespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// CheckPeriod is how often the leader checks that it still holds the lock, and how long one
// check may take.
const CheckPeriod = 5 * time.Second

// ShutdownTimeout bounds the manager's graceful shutdown (main.go), so that a process that lost
// the lock has ended within 2 CheckPeriods and ShutdownTimeout, 30 s: no longer than the
// default termination grace period by which the new leader waits (Become).
const ShutdownTimeout = 20 * time.Second

// ErrLost is returned when this process no longer holds the lock.
var ErrLost = errors.New("this pod no longer holds the leader lock")

// Lease is this process's leadership.
type Lease struct {
	client        client.Client // uncached: the lock is read as it is now
	lock          types.NamespacedName
	pod           string
	recoverAfter  time.Time
	tookOver      bool
	previousOwner string
	checkPeriod   time.Duration // CheckPeriod; shorter in tests
}

// Become blocks until this process's pod holds the lock named lockName, in the pod's namespace.
// Outside a cluster (no service account namespace) there is no pod to own the lock: it returns a
// nil Lease, and the process runs as the single instance.
func Become(ctx context.Context, cl client.Client, lockName string) (*Lease, error) {
	ns, err := os.ReadFile(namespaceFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read this pod's namespace: %w", err)
	}
	l := &Lease{client: cl, lock: types.NamespacedName{Namespace: strings.TrimSpace(string(ns)), Name: lockName}, pod: os.Getenv(podNameEnv),
		checkPeriod: CheckPeriod}
	// Whether this pod held the lock already (its container restarted) or takes it from another.
	before, err := l.owner(ctx)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("read the leader lock: %w", err)
	}
	if err := leader.Become(ctx, lockName, leader.WithClient(cl)); err != nil {
		return nil, err
	}
	l.tookOver, l.previousOwner = before != l.pod, before
	pod := &corev1.Pod{}
	if err := cl.Get(ctx, types.NamespacedName{Namespace: l.lock.Namespace, Name: l.pod}, pod); err != nil {
		return nil, fmt.Errorf("read this pod: %w", err)
	}
	lock := &corev1.ConfigMap{}
	if err := cl.Get(ctx, l.lock, lock); err != nil {
		return nil, fmt.Errorf("read the leader lock: %w", err)
	}
	// The lock was made when this pod took it over (or first led). The previous leader's pod ran
	// the same spec: its process ended at the latest a grace period after its pod was deleted,
	// which was before the lock went; a process that stops by itself takes no longer
	// (ShutdownTimeout). Counted from the lock, this holds for this pod's later containers too.
	grace := 30 * time.Second
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	l.recoverAfter = lock.CreationTimestamp.Add(grace + CheckPeriod)
	return l, nil
}

// TookOver reports whether the lock came from another pod (or was made anew), and which pod held
// it when this one started waiting, if any.
func (l *Lease) TookOver() (bool, string) { return l.tookOver, l.previousOwner }

// owner is the name of the pod that owns the lock.
func (l *Lease) owner(ctx context.Context) (string, error) {
	cm := &corev1.ConfigMap{}
	if err := l.client.Get(ctx, l.lock, cm); err != nil {
		return "", err
	}
	for _, ref := range cm.OwnerReferences {
		if ref.Kind == "Pod" {
			return ref.Name, nil
		}
	}
	return "", nil
}

// Holds returns nil if this process's pod holds the lock now, ErrLost if it does not, or the
// error that kept it from knowing.
func (l *Lease) Holds(ctx context.Context) error {
	owner, err := l.owner(ctx)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: the lock %s is gone", ErrLost, l.lock)
	case err != nil:
		return fmt.Errorf("read the leader lock: %w", err)
	case owner != l.pod:
		return fmt.Errorf("%w: the lock %s belongs to pod %q", ErrLost, l.lock, owner)
	}
	return nil
}

// MayRecover returns nil if this process may recover a release another process left pending
// now: it holds the lock, and no earlier leader can still be working on the release.
func (l *Lease) MayRecover(ctx context.Context) error {
	if l == nil {
		return nil
	}
	if wait := time.Until(l.recoverAfter); wait > 0 {
		return fmt.Errorf("this pod took the leader lock over from another less than a grace period ago; that pod's process may still be finishing the operation for %s", wait.Round(time.Second))
	}
	return l.Holds(ctx)
}

// Start checks every CheckPeriod that this process still holds the lock (each check bounded by
// CheckPeriod), and returns ErrLost when it does not, which stops the manager: the process ends, and the pod's next container (if the
// pod still exists) waits for the lock again. Errors reading the lock (the API server down) do
// not end it. A manager.Runnable.
func (l *Lease) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("leader")
	t := time.NewTicker(l.checkPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		checkCtx, cancel := context.WithTimeout(ctx, l.checkPeriod)
		err := l.Holds(checkCtx)
		cancel()
		if errors.Is(err, ErrLost) {
			log.Error(err, "stopping: another process may lead now")
			return err
		}
	}
}
