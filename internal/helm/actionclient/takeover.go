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
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/example/memcached-operator/internal/helm/library"
	oplabels "github.com/example/memcached-operator/internal/labels"
)

// Records that earlier versions of the operator wrote carry no seal (seal.go); those of versions
// before 1.0.0 not even oplabels.Record. A record this operator made, of any version, is
// controlled by its CR (the Helm reconciler's storage sets the owner reference); one made by the
// helm CLI or another operator is not. But a tenant can write such a record too. So a record
// created before the operator began sealing (Seal.Since) is judged once by what it could do: every
// object of its manifest must be in the CR's namespace, of the chart's kinds, and, where it
// exists, the release's (Fence.CheckManifest). One that passes is labelled and sealed; one that
// fails stays as it is, and every read of its release refuses it. Any other record without a
// valid seal is refused.

// SealedRecords is what SealRecords did.
type SealedRecords struct {
	// Sealed counts the records of earlier versions it sealed.
	Sealed int
	// Resealed counts the records sealed with an older key that it sealed with the newest;
	// Older those it could not (changed meanwhile, or their seal does not hold).
	Resealed, Older int
	// Refused says, per record (namespace/name), why it was left unsealed.
	Refused map[string]string
	// Written holds the resourceVersion of each record it wrote: the release store's reads of
	// those releases go to the API server until the cache shows them (ReleaseStore.Wrote).
	Written map[types.NamespacedName]string
}

// SealRecords runs at start-up, before the first reconcile, over the release records that the CRs
// of kind gvk control in namespaces (all if empty):
//   - a record created before `before` (the seal's Since) that carries no seal the operator's
//     keys know is an earlier version's: it is sealed if its manifest passes fence;
//   - a record sealed with an older key of the ring is sealed again with the newest (a key
//     rotation), if its seal holds.
//
// It reads uncached, a page at a time, the records' metadata (the namespaces may hold many Helm
// releases of others, of hundreds of kB each), and reads whole only the records it seals.
func SealRecords(ctx context.Context, c client.Client, seal *Seal, fence *Fence, gvk metav1.GroupVersionKind, namespaces []string, before time.Time) (SealedRecords, error) {
	done := SealedRecords{Refused: map[string]string{}, Written: map[types.NamespacedName]string{}}
	sel := labels.SelectorFromSet(labels.Set{library.RecordOwnerLabel: library.RecordOwner})
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	for _, ns := range namespaces {
		opts := []client.ListOption{client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}, client.Limit(250)}
		for {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
			if err := c.List(ctx, list, opts...); err != nil {
				return done, fmt.Errorf("list release records: %w", err)
			}
			for i := range list.Items {
				m := &list.Items[i]
				if !controlledByKind(m, gvk) {
					continue
				}
				// A record that cannot be read or written now is left as it is (refused if it is
				// not sealed), and the others go on: one record does not hold the operator back.
				key := client.ObjectKeyFromObject(m)
				switch id, known := seal.keyOf(m); {
				case known && id != seal.Current():
					switch written, err := resealRecord(ctx, c, seal, key); {
					case err != nil:
						log.FromContext(ctx).Error(err, "a release record is left sealed with an older key", "record", key)
						done.Older++
					case written != "":
						done.Resealed++
						done.Written[key] = written
					}
				case !known && m.CreationTimestamp.Time.Before(before):
					written, why, err := sealEarlierRecord(ctx, c, seal, fence, gvk, key)
					if err != nil {
						why = err.Error()
					}
					if written != "" {
						done.Sealed++
						done.Written[key] = written
					} else if why != "" {
						done.Refused[m.Namespace+"/"+m.Name] = why
					}
				}
			}
			if list.Continue == "" {
				break
			}
			opts = append(opts, client.Continue(list.Continue))
		}
	}
	return done, nil
}

// resealRecord seals a record again with the newest key, if its seal holds, and returns the
// resourceVersion written ("": none): one whose seal does not hold is refused whatever key it
// names, and needs none. It fails when the record could not be sealed again, and its older key is
// still needed.
func resealRecord(ctx context.Context, c client.Client, seal *Seal, key client.ObjectKey) (string, error) {
	sec := &corev1.Secret{}
	if err := c.Get(ctx, key, sec); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("read release record %s: %w", key, err)
	}
	uid, _, err := seal.verify(sec)
	if err != nil {
		return "", nil // refused when read
	}
	seal.sign(sec, uid)
	if err := c.Update(ctx, sec); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("seal release record %s with the newest key: %w", key, err)
	}
	return sec.ResourceVersion, nil
}

// sealEarlierRecord judges one record of an earlier version by its manifest, and seals it when
// nothing in it reaches beyond the release, returning the resourceVersion written; else it says
// why not.
func sealEarlierRecord(ctx context.Context, c client.Client, seal *Seal, fence *Fence, gvk metav1.GroupVersionKind, key client.ObjectKey) (string, string, error) {
	sec := &corev1.Secret{}
	if err := c.Get(ctx, key, sec); err != nil {
		return "", "", client.IgnoreNotFound(err)
	}
	ref := metav1.GetControllerOf(sec)
	if ref == nil {
		return "", "", nil
	}
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(schema.GroupVersionKind(gvk))
	cr.SetNamespace(sec.Namespace)
	cr.SetName(ref.Name)
	cr.SetUID(ref.UID)
	why := ""
	rel, err := decodeRecord(sec.Data[recordDataKey])
	switch {
	case err != nil:
		why = fmt.Sprintf("it does not decode: %v", err)
	case rel.Name != ref.Name || sec.Labels[library.RecordNameLabel] != ref.Name || (rel.Namespace != "" && rel.Namespace != sec.Namespace):
		why = fmt.Sprintf("it is a record of release %s/%s, not of its controller %s %s", rel.Namespace, rel.Name, ref.Kind, ref.Name)
	case len(rel.Hooks) > 0:
		why = fmt.Sprintf("it holds %d hooks, which no version of the chart renders", len(rel.Hooks))
	default:
		if err := fence.CheckManifest(ctx, cr, rel.Manifest); err != nil {
			why = "written before the operator sealed its records, it names what is not the release's: " + err.Error()
		}
	}
	if why != "" {
		seal.noteRefused(sec.UID, why)
		return "", why, nil
	}
	markOurs(sec)
	seal.sign(sec, ref.UID)
	if err := c.Update(ctx, sec); err != nil {
		if apierrors.IsNotFound(err) {
			return "", "", nil
		}
		why := fmt.Sprintf("it could not be sealed: %v", err) // changed meanwhile, say: not sealed, so refused
		seal.noteRefused(sec.UID, why)
		return "", why, nil
	}
	return sec.ResourceVersion, "", nil
}

// keyOf is the key a record's seal names, and whether the ring holds it (whether the seal holds
// is checked when the record is read).
func (s *Seal) keyOf(obj metav1.Object) (string, bool) {
	parts := strings.Split(obj.GetAnnotations()[oplabels.RecordSeal], ":")
	if len(parts) != 3 {
		return "", false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.keys[parts[1]]
	return parts[1], ok
}

// Current is the key that seals what the operator writes: the newest of the ring.
func (s *Seal) Current() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.current
}

// takeOver is called when an install finds records of the release's name that this operator's
// reads did not show (they lack oplabels.Record). Records of an earlier version of the operator
// were sealed at start-up (SealRecords), so such a record is not the operator's: one that
// names this CR as its controller is refused, any other is someone else's release, left alone.
func (c *actionClient) takeOver(name string) error {
	ctx := context.Background()
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := c.client.List(ctx, list, client.InNamespace(c.owner.GetNamespace()), client.MatchingLabels{library.RecordOwnerLabel: library.RecordOwner, library.RecordNameLabel: name}); err != nil {
		return fmt.Errorf("list the records of release %s: %w", name, err)
	}
	var foreign []string
	for i := range list.Items {
		s := &list.Items[i]
		if s.Labels[oplabels.Record] == oplabels.Operator {
			continue
		}
		if ref := metav1.GetControllerOf(s); ref != nil && ref.UID == c.owner.GetUID() {
			return c.reportRefused(&RecordRefusedError{Namespace: s.Namespace, Name: s.Name,
				Why: "it names this resource as its controller, but the operator did not write it"}, "InstallRelease")
		}
		foreign = append(foreign, s.Name)
	}
	if len(foreign) == 0 {
		return fmt.Errorf("release %s: Helm found a record of it that the operator's reads did not show; it is tried again", name)
	}
	c.recorder.Eventf(c.owner, nil, corev1.EventTypeWarning, "ForeignRelease", "InstallRelease",
		"A Helm release named %s that this operator did not make exists in namespace %s (records %s); it is left alone", name, c.owner.GetNamespace(), strings.Join(foreign, ", "))
	return fmt.Errorf("a Helm release named %s that this operator did not make (made by the helm CLI or another operator: records %s) exists in namespace %s; the operator leaves it alone: rename this %s or uninstall that release",
		name, strings.Join(foreign, ", "), c.owner.GetNamespace(), c.owner.GetObjectKind().GroupVersionKind().Kind)
}

func controlledByKind(obj client.Object, gvk metav1.GroupVersionKind) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.Kind == gvk.Kind && strings.HasPrefix(ref.APIVersion, gvk.Group+"/")
}
