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

package actionclient

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/memcached-operator/internal/helm/library"
	oplabels "github.com/example/memcached-operator/internal/labels"
)

// Releases made by the operator before 1.0.0 have records without oplabels.Record. A record this
// operator made, of any version, is controlled by its CR (the Helm reconciler's storage sets the
// owner reference); one made by the helm CLI or another operator is not. So records controlled by
// a CR of kind are taken over (labelled), and no other record is.

// LabelEarlierRecords labels the release records that earlier versions of the operator wrote in
// namespaces (all if empty), so the cache sees them before the first reconcile. It reads
// uncached, a page at a time, the records' metadata only (the namespaces may hold many Helm
// releases of others, of hundreds of kB each), and returns how many it labelled.
func LabelEarlierRecords(ctx context.Context, c client.Client, gvk metav1.GroupVersionKind, namespaces []string) (int, error) {
	unlabelled, err := labels.NewRequirement(oplabels.Record, selection.DoesNotExist, nil)
	if err != nil {
		return 0, err
	}
	sel := labels.SelectorFromSet(labels.Set{library.RecordOwnerLabel: library.RecordOwner}).Add(*unlabelled)
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	n := 0
	for _, ns := range namespaces {
		opts := []client.ListOption{client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}, client.Limit(250)}
		for {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
			if err := c.List(ctx, list, opts...); err != nil {
				return n, fmt.Errorf("list release records without %s: %w", oplabels.Record, err)
			}
			for i := range list.Items {
				s := &list.Items[i]
				if !controlledByKind(s, gvk) {
					continue
				}
				if err := labelRecord(ctx, c, s); err != nil {
					return n, err
				}
				n++
			}
			if list.Continue == "" {
				break
			}
			opts = append(opts, client.Continue(list.Continue))
		}
	}
	return n, nil
}

// takeOver is called when an install finds records of the release's name that this operator's
// reads did not show: records of an earlier version of the operator for this CR are labelled, so
// the next reconcile upgrades the release; any other record is someone else's release, left alone.
func (c *actionClient) takeOver(name string) error {
	ctx := context.Background()
	list := &corev1.SecretList{}
	if err := c.client.List(ctx, list, client.InNamespace(c.owner.GetNamespace()), client.MatchingLabels{library.RecordOwnerLabel: library.RecordOwner, library.RecordNameLabel: name}); err != nil {
		return fmt.Errorf("list the records of release %s: %w", name, err)
	}
	var foreign []string
	for i := range list.Items {
		s := &list.Items[i]
		if s.Labels[oplabels.Record] == oplabels.Operator {
			continue
		}
		if ref := metav1.GetControllerOf(s); ref == nil || ref.UID != c.owner.GetUID() {
			foreign = append(foreign, s.Name)
		}
	}
	if len(foreign) > 0 {
		c.recorder.Eventf(c.owner, nil, corev1.EventTypeWarning, "ForeignRelease", "InstallRelease",
			"A Helm release named %s that this operator did not make exists in namespace %s (records %s); it is left alone", name, c.owner.GetNamespace(), strings.Join(foreign, ", "))
		return fmt.Errorf("a Helm release named %s that this operator did not make (made by the helm CLI or another operator: records %s) exists in namespace %s; the operator leaves it alone: rename this %s or uninstall that release",
			name, strings.Join(foreign, ", "), c.owner.GetNamespace(), c.owner.GetObjectKind().GroupVersionKind().Kind)
	}
	taken := 0
	for i := range list.Items {
		if s := &list.Items[i]; s.Labels[oplabels.Record] != oplabels.Operator {
			if err := labelRecord(ctx, c.client, s); err != nil {
				return err
			}
			taken++
		}
	}
	c.recorder.Eventf(c.owner, nil, corev1.EventTypeNormal, "ReleaseTakenOver", "InstallRelease",
		"Release %s: %d records written by an earlier version of the operator are taken over; the release is upgraded next", name, taken)
	return fmt.Errorf("release %s: took over %d records written by an earlier version of the operator; the release is upgraded at the next reconcile", name, taken)
}

func controlledByKind(obj client.Object, gvk metav1.GroupVersionKind) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.Kind == gvk.Kind && strings.HasPrefix(ref.APIVersion, gvk.Group+"/")
}

func labelRecord(ctx context.Context, c client.Client, s client.Object) error {
	patch := client.MergeFrom(s.DeepCopyObject().(client.Object))
	markOurs(s)
	if err := c.Patch(ctx, s, patch); err != nil {
		return fmt.Errorf("label release record %s/%s: %w", s.GetNamespace(), s.GetName(), err)
	}
	return nil
}
