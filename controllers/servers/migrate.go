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

package servers

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/progress"
	"github.com/example/memcached-operator/internal/helm"
	"github.com/example/memcached-operator/internal/labels"
)

// What the operand controller does once for caches of earlier releases: their spec and finalizer
// moved, their pods retired from the Service only once the servers serve (see
// reconciler.go).

// DefaultRetireDelay is how long a pod of an earlier release stays up after leaving the Service,
// so that every node's kube-proxy has stopped sending it connections before it stops.
const DefaultRetireDelay = 10 * time.Second

// earlierReleasePods are the release's pods that no controller owns: an earlier release's, left
// running when its Deployment was replaced (by one with another selector, or by the StatefulSet).
// (The chart's pods carry part-of; a bare pod someone else labelled alike is not ours.)
func earlierReleasePods(pods []corev1.Pod) []*corev1.Pod {
	var old []*corev1.Pod
	for i := range pods {
		if p := &pods[i]; metav1.GetControllerOf(p) == nil && p.DeletionTimestamp == nil && p.Labels[labels.PartOf] == labels.Operator {
			old = append(old, p)
		}
	}
	return old
}

// retireOldPods moves the pods of the release that no controller owns (an earlier release's,
// left running when its Deployment was replaced) out of service once the StatefulSet has all its
// servers available: first out of the Services, then, RetireDelay later, deleted. It returns how
// many such pods are left and when to look again.
func (r *Reconciler) retireOldPods(ctx context.Context, mc *cachev1.Memcached, servers *appsv1.StatefulSet, pods []corev1.Pod) (int, time.Duration, error) {
	old := earlierReleasePods(pods)
	if err := r.tieToCR(ctx, mc, old); err != nil {
		return 0, 0, err
	}
	if len(old) == 0 || servers == nil || !progress.OfStatefulSet(servers).Complete() {
		return len(old), 0, nil // the StatefulSet's watch brings us back when its rollout completes
	}
	var requeue time.Duration
	left := 0
	for _, p := range old {
		at, marked := p.Annotations[labels.RetiredAt]
		if !marked {
			before := p.DeepCopy()
			delete(p.Labels, labels.Component)
			metav1.SetMetaDataAnnotation(&p.ObjectMeta, labels.RetiredAt, time.Now().UTC().Format(time.RFC3339))
			if err := r.Patch(ctx, p, client.MergeFrom(before)); err != nil {
				return 0, 0, fmt.Errorf("take pod %s out of the Service: %w", p.Name, err)
			}
			r.Recorder.Eventf(mc, nil, corev1.EventTypeNormal, "PodRetiring", "RetirePod",
				"Pod %s of an earlier release left the Service; it stops in %s", p.Name, r.RetireDelay)
			requeue, left = r.RetireDelay, left+1
			continue
		}
		since, err := time.Parse(time.RFC3339, at)
		if wait := r.RetireDelay - time.Since(since); err == nil && wait > 0 {
			requeue, left = max(requeue, wait), left+1
			continue
		}
		if err := r.Delete(ctx, p, client.Preconditions{UID: &p.UID}); client.IgnoreNotFound(err) != nil {
			return 0, 0, fmt.Errorf("delete retired pod %s: %w", p.Name, err)
		}
	}
	return left, requeue, nil
}

// tieToCR gives each pod of an earlier release an owner reference to the CR (not as controller):
// their Deployment is gone, and a CR deleted before they are retired takes them with it instead
// of leaving memcached running unowned.
func (r *Reconciler) tieToCR(ctx context.Context, mc *cachev1.Memcached, old []*corev1.Pod) error {
	for _, p := range old {
		if slices.ContainsFunc(p.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == mc.UID }) {
			continue
		}
		before := p.DeepCopy()
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
			APIVersion: cachev1.GroupVersion.String(), Kind: "Memcached", Name: mc.Name, UID: mc.UID})
		// On the pod's resourceVersion: the garbage collector may be dropping the reference to
		// its deleted ReplicaSet meanwhile (that change brings the pod back here).
		err := r.Patch(ctx, p, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("tie pod %s of an earlier release to Memcached %s: %w", p.Name, mc.Name, err)
		}
	}
	return nil
}

// migrateSpec moves deprecated spec fields to their new names. It patches with the
// resourceVersion it read, so a concurrent edit of the CR is never overwritten.
func (r *Reconciler) migrateSpec(ctx context.Context, mc *cachev1.Memcached) (bool, error) {
	if mc.Spec.Memcached == nil || mc.Spec.Memcached.MemoryLimitMB == 0 {
		return false, nil
	}
	before := mc.DeepCopy()
	old := mc.Spec.Memcached.MemoryLimitMB
	mc.Spec.Memcached.MaxMemoryMB = old
	mc.Spec.Memcached.MemoryLimitMB = 0
	if err := r.Patch(ctx, mc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, fmt.Errorf("move spec.memcached.memoryLimitMB to maxMemoryMB in Memcached %s/%s: %w", mc.Namespace, mc.Name, err)
	}
	r.Recorder.Eventf(mc, nil, corev1.EventTypeNormal, "SpecMigrated", "MigrateSpec",
		"spec.memcached.memoryLimitMB (renamed in 0.2.0) moved to spec.memcached.maxMemoryMB: %d", old)
	return true, nil
}

// moveFinalizer moves a CR made before 1.3.0 from the library's unqualified finalizer to
// helm.UninstallFinalizer, which holds it the same way without the API server's warning on each
// write. The patch carries the resourceVersion: the Helm side's own write wins a race, and the
// move is tried again on the CR it wrote.
func (r *Reconciler) moveFinalizer(ctx context.Context, mc *cachev1.Memcached) error {
	moved, changed := helm.MovedFinalizers(mc.Finalizers)
	if !changed {
		return nil
	}
	before := mc.DeepCopy()
	mc.Finalizers = moved
	if err := r.Patch(ctx, mc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("move the finalizer of Memcached %s/%s to %s: %w", mc.Namespace, mc.Name, helm.UninstallFinalizer, err)
	}
	ctrl.LoggerFrom(ctx).Info("finalizer moved to its qualified name", "finalizer", helm.UninstallFinalizer)
	return nil
}
