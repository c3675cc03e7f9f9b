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
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	oplabels "github.com/example/memcached-operator/internal/labels"
)

// Helm's view of a namespace's Secrets: the release records this operator wrote, sealed (see
// releases.go for the store that reads them from the cache).

// recordingSecrets is Helm's view of a namespace's Secrets. It marks the records it writes as
// this operator's (oplabels.Record) and seals them, shows Helm only those, refuses those whose
// seal does not hold, and tells the store (if any) which record versions it wrote.
type recordingSecrets struct {
	corev1client.SecretInterface
	store     *ReleaseStore // nil: none to tell
	seal      *Seal
	namespace string
	// owner is the controller reference to the CR, which every record gets (as the library's
	// owner-reference client sets it) and its seal names.
	owner metav1.OwnerReference
}

// SealedSecrets is the operator's view of the release records of the CR that owner refers to, in
// secrets (the Secrets of its namespace), for Helm's Secrets driver: what it writes is controlled
// by the CR, sealed and marked as the operator's; what it reads must be. The Helm reconciler's
// storage reads and writes through the same view.
func SealedSecrets(secrets corev1client.SecretInterface, namespace string, seal *Seal, owner metav1.OwnerReference) corev1client.SecretInterface {
	return recordingSecrets{SecretInterface: secrets, seal: seal, namespace: namespace, owner: owner}
}

// prepare makes a record the operator writes: in its namespace (which the seal binds; Helm leaves
// it to the client), controlled by the CR, marked, sealed.
func (r recordingSecrets) prepare(s *corev1.Secret) {
	s.Namespace = r.namespace
	if !slices.ContainsFunc(s.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == r.owner.UID }) {
		s.OwnerReferences = append(s.OwnerReferences, r.owner)
	}
	markOurs(s)
	r.seal.sign(s, r.owner.UID)
}

func (r recordingSecrets) wrote(name, resourceVersion string) {
	if r.store != nil {
		r.store.wrote(r.namespace, name, resourceVersion)
	}
}

func (r recordingSecrets) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error) {
	s, err := r.SecretInterface.Get(ctx, name, opts)
	if err != nil {
		return s, err
	}
	if s.Labels[oplabels.Record] != oplabels.Operator {
		return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name) // someone else's release
	}
	if err := r.seal.admit(s, r.owner.UID); err != nil {
		return nil, err
	}
	return s, nil
}

func (r recordingSecrets) List(ctx context.Context, opts metav1.ListOptions) (*corev1.SecretList, error) {
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, err
	}
	req, err := labels.NewRequirement(oplabels.Record, selection.Equals, []string{oplabels.Operator})
	if err != nil {
		return nil, err
	}
	opts.LabelSelector = sel.Add(*req).String()
	list, err := r.SecretInterface.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		if err := r.seal.admit(&list.Items[i], r.owner.UID); err != nil {
			return nil, err
		}
	}
	return list, nil
}

func (r recordingSecrets) Create(ctx context.Context, s *corev1.Secret, opts metav1.CreateOptions) (*corev1.Secret, error) {
	r.prepare(s)
	out, err := r.SecretInterface.Create(ctx, s, opts)
	if err == nil {
		r.wrote(out.Name, out.ResourceVersion)
	}
	return out, err
}

func (r recordingSecrets) Update(ctx context.Context, s *corev1.Secret, opts metav1.UpdateOptions) (*corev1.Secret, error) {
	r.prepare(s)
	out, err := r.SecretInterface.Update(ctx, s, opts)
	if err == nil {
		r.wrote(out.Name, out.ResourceVersion)
	}
	return out, err
}

func (r recordingSecrets) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	err := r.SecretInterface.Delete(ctx, name, opts)
	if err == nil || apierrors.IsNotFound(err) {
		r.wrote(name, "")
	}
	return err
}

func markOurs(s metav1.Object) {
	l := s.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[oplabels.Record] = oplabels.Operator
	s.SetLabels(l)
}
