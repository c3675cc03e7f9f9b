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

package controllers

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/example/memcached-operator/internal/labels"
)

// The StatefulSet's hold on its rollout while servers are changed in place: written, let go,
// abandoned (see memcached_resize.go).

// letGo ends a hold without resizing the rest in place: the StatefulSet then replaces the servers
// not yet resized, one at a time.
func (r *MemcachedResizeReconciler) letGo(ctx context.Context, mc client.Object, servers *appsv1.StatefulSet, rec resizeRecord, why string) error {
	rec.Outcome, rec.Why, rec.At, rec.Blocked, rec.Restart = outcomeRolledOut, why, ptr.To(metav1.Now()), "", nil
	if rec.Way != "" {
		rec.Way = WayStartedEmpty
	}
	if err := r.release(ctx, servers, rec); err != nil {
		return err
	}
	r.announceRollout(mc, servers, rec)
	return nil
}

// abandon ends a hold that nothing came of (the upgrade it was made for was not applied, and the
// servers run what they ran): the partition and the record go, as if it had never been.
func (r *MemcachedResizeReconciler) abandon(ctx context.Context, servers *appsv1.StatefulSet, why string) error {
	if err := r.writeHold(ctx, servers, nil, true); err != nil {
		return err
	}
	log.FromContext(ctx).Info("the hold for an in-place resize ended without a change", "statefulSet", servers.Name, "why", why)
	return nil
}

// record writes the resize's record, the hold staying as it is.
func (r *MemcachedResizeReconciler) record(ctx context.Context, servers *appsv1.StatefulSet, rec resizeRecord) error {
	return r.writeHold(ctx, servers, &rec, false)
}

// release lets go of the StatefulSet's rollout and records the outcome.
func (r *MemcachedResizeReconciler) release(ctx context.Context, servers *appsv1.StatefulSet, rec resizeRecord) error {
	return r.writeHold(ctx, servers, &rec, true)
}

// writeHold writes rec on the StatefulSet as its ResizeHold annotation (nil: the annotation goes)
// and, with letGo, lets go of its rollout (partition 0), in one patch on the version read.
func (r *MemcachedResizeReconciler) writeHold(ctx context.Context, servers *appsv1.StatefulSet, rec *resizeRecord, letGo bool) error {
	s := servers.DeepCopy()
	patch := client.MergeFromWithOptions(servers, client.MergeFromWithOptimisticLock{})
	if letGo && s.Spec.UpdateStrategy.RollingUpdate != nil {
		s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(int32(0))
	}
	if rec == nil {
		delete(s.Annotations, labels.ResizeHold)
	} else {
		metav1.SetMetaDataAnnotation(&s.ObjectMeta, labels.ResizeHold, rec.annotation())
	}
	if err := r.Patch(ctx, s, patch); err != nil {
		if letGo {
			return fmt.Errorf("let go of the rollout of StatefulSet %s: %w", s.Name, err)
		}
		return fmt.Errorf("record the change of StatefulSet %s: %w", s.Name, err)
	}
	*servers = *s // a later write of the same reconcile is on the version written
	return nil
}

// partitionOf is the StatefulSet's partition: the servers below it are not replaced.
func partitionOf(s *appsv1.StatefulSet) int32 {
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		return *ru.Partition
	}
	return 0
}

func replicasOf(s *appsv1.StatefulSet) int32 { return ptr.Deref(s.Spec.Replicas, 1) }
