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
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The split scenario runs two operator processes as two pods of the operator's Deployment
// would: each with POD_NAME and POD_NAMESPACE, a service account namespace file, and leader for
// life. Their Pod objects exist (no kubelet runs them), with the Deployment's grace period.

var operatorPods = []string{"operator-a", "operator-b"}

const (
	lockName = "memcached-operator-lock"
	// podGrace is the pods' termination grace period, as in the operator's Deployment.
	podGrace = 30 // seconds
	// resumeAfter: the frozen old leader resumes within its grace period, when the new leader
	// must still leave its releases alone.
	resumeAfter = 20 * time.Second
	// selfStopLimit: a process that lost the lock ends within 2 checks and its graceful shutdown.
	selfStopLimit = 30 * time.Second
)

// inPodMounts wraps a command line so that the process finds a service account namespace file as
// in a pod (leader for life reads its namespace there): in a mount namespace of its own, a tmpfs
// over /run holds /run/secrets/kubernetes.io/serviceaccount/namespace. It needs root.
func inPodMounts(args []string) []string {
	const script = `mount -t tmpfs tmpfs /run && mkdir -p /run/secrets/kubernetes.io/serviceaccount && ` +
		`printf %s "$POD_NAMESPACE" > /run/secrets/kubernetes.io/serviceaccount/namespace && exec "$@"`
	return append([]string{"unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh"}, args...)
}

// startPair starts both operator pods' processes at once and waits until one leads.
func startPair(ctx context.Context, r *chaosRun) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the split scenario needs root: each operator process gets a mount namespace of its own")
	}
	for _, name := range operatorPods {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchNamespace},
			Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](podGrace),
				Containers: []corev1.Container{{Name: "manager", Image: "controller:latest"}}}}
		if _, err := r.kc.CoreV1().Pods(benchNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for _, name := range operatorPods {
		op, err := r.startOperator(name, []string{"POD_NAME=" + name, "POD_NAMESPACE=" + benchNamespace}, true)
		if err != nil {
			return err
		}
		r.operators = append(r.operators, op)
	}
	_, err := r.waitLeader(ctx, "", time.Minute)
	return err
}

// waitLeader waits until a pod other than not holds the leader lock, and returns it.
func (r *chaosRun) waitLeader(ctx context.Context, not string, limit time.Duration) (string, error) {
	deadline := time.Now().Add(limit)
	for {
		cm, err := r.kc.CoreV1().ConfigMaps(benchNamespace).Get(ctx, lockName, metav1.GetOptions{})
		if err == nil {
			for _, ref := range cm.OwnerReferences {
				if ref.Kind == "Pod" && ref.Name != not {
					return ref.Name, nil
				}
			}
		} else if !apierrors.IsNotFound(err) {
			return "", err
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no pod other than %q holds the leader lock after %s (%s)", not, limit, r.leaderTrouble(ctx))
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return "", err
		}
	}
}

// leaderTrouble says why no process took the lock: the lock and its owner as the API server has
// them, and the last words on leadership and garbage collection in the logs of the operators
// and of kube-controller-manager (whose garbage collector deletes a lock whose pod is gone).
func (r *chaosRun) leaderTrouble(ctx context.Context) string {
	var says []string
	cm, err := r.kc.CoreV1().ConfigMaps(benchNamespace).Get(ctx, lockName, metav1.GetOptions{})
	if err != nil {
		says = append(says, fmt.Sprintf("lock: %v", err))
	} else {
		for _, ref := range cm.OwnerReferences {
			owner := "which exists"
			if pod, err := r.kc.CoreV1().Pods(benchNamespace).Get(ctx, ref.Name, metav1.GetOptions{}); err != nil {
				owner = err.Error()
			} else {
				owner += fmt.Sprintf(" (uid %s)", pod.UID)
			}
			says = append(says, fmt.Sprintf("lock made %s, owned by %s %s (uid %s): %s", cm.CreationTimestamp.Format(time.TimeOnly), ref.Kind, ref.Name, ref.UID, owner))
		}
	}
	// Which lines of each log say something on the lock: the garbage collector's start and
	// what it did with the lock; the operators' leader election.
	about := map[string][]string{"kube-controller-manager": {"collect garbage", "resource monitors", lockName}}
	for _, name := range operatorPods {
		about[name] = []string{"leader", lockName}
	}
	for _, name := range append([]string{"kube-controller-manager"}, operatorPods...) {
		raw, err := os.ReadFile(filepath.Join(r.cp.dir, name+".log"))
		if err != nil {
			says = append(says, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		var lines []string
		for _, line := range strings.Split(string(raw), "\n") {
			if slices.ContainsFunc(about[name], func(word string) bool { return strings.Contains(line, word) }) {
				lines = append(lines, line[:min(len(line), 300)])
			}
		}
		says = append(says, fmt.Sprintf("%s's last lines on it: %s", name, strings.Join(lines[max(0, len(lines)-4):], " | ")))
	}
	says = append(says, fmt.Sprintf("kube-controller-manager exited %d times so far", r.cp.kcm.exits()))
	return strings.Join(says, "; ")
}

// splitFaults makes two processes lead at once, 5 s into convergence: the leader's process is
// frozen (SIGSTOP, as on a node that stalls) with operations in flight, and its pod force-deleted,
// as an impatient admin does (kubectl delete pod --force --grace-period=0). The lock goes with the
// pod object and the other pod takes it. 20 s later, within its pod's grace period, the old
// process resumes (SIGCONT): it must find that it lost the lock and end by itself, while the new
// leader must have left the releases it left pending alone until the grace period had passed.
// The old process is not started again (its pod is gone).
func splitFaults(ctx context.Context, r *chaosRun) error {
	if err := sleep(ctx, 5*time.Second); err != nil {
		return err
	}
	old, err := r.waitLeader(ctx, "", time.Second)
	if err != nil {
		return err
	}
	oldOp := r.operators[slices.Index(operatorPods, old)]
	oldOp.retire()
	oldOp.signal(syscall.SIGSTOP)
	deleted := time.Now()
	if err := r.kc.CoreV1().Pods(benchNamespace).Delete(ctx, old, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		return err
	}
	next, err := r.waitLeader(ctx, old, 2*time.Minute)
	if err != nil {
		return err
	}
	r.notes = append(r.notes, fmt.Sprintf("%s led, was frozen and its pod force-deleted 5 s into convergence; %s took the lock %s later",
		old, next, time.Since(deleted).Round(time.Second)))
	if err := sleep(ctx, resumeAfter-time.Since(deleted)); err != nil {
		return err
	}
	oldOp.signal(syscall.SIGCONT)
	resumed := time.Now()
	select {
	case <-oldOp.done:
		r.notes = append(r.notes, fmt.Sprintf("%s resumed %s after its pod went and ended by itself %s later (lock lost)",
			old, resumeAfter, time.Since(resumed).Round(time.Second)))
		return nil
	case <-time.After(selfStopLimit):
		oldOp.kill()
		return fmt.Errorf("%s still ran %s after it resumed without the lock", old, selfStopLimit)
	}
}

// splitReport adds to the notes what the leaders' logs say about releases left pending by the
// other process.
func splitReport(ctx context.Context, r *chaosRun) {
	for _, name := range operatorPods {
		raw, err := os.ReadFile(filepath.Join(r.cp.dir, name+".log"))
		if err != nil {
			continue
		}
		if held := strings.Count(string(raw), "is not recovered yet"); held > 0 {
			r.notes = append(r.notes, fmt.Sprintf("%s held back the recovery of a pending release %d times (another pod's process could still be on it)", name, held))
		}
	}
}
