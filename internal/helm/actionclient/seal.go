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
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/memcached-operator/internal/helm/library"
	oplabels "github.com/example/memcached-operator/internal/labels"
)

// Helm's release records live in the CR's namespace, where a tenant who may write Secrets can
// write one that looks like the operator's. So the operator seals each record it writes with an
// HMAC whose key only it (and the admins of its namespace) can read, and acts only on records
// whose seal holds (docs/security.md). The seal binds the record's content (Helm's encoded
// release, which holds the manifest), its name and namespace, Helm's labels that select it
// (name, owner, status, version) and the UID of the CR that controls it: a copy in another
// namespace, under another revision or for a new CR of the same name does not verify. The
// record stays in Helm's format: helm list and helm history read it.

// SealRingName is the Secret in the operator's namespace that holds the sealing keys.
const SealRingName = "memcached-operator-release-seal"

// sealKeyPrefix names a key in the ring: key-1, key-2, ...; the highest seals, all verify.
const sealKeyPrefix = "key-"

// sealFormat is the version of the seal's input; it starts the annotation's value.
const sealFormat = "v1"

// Seal holds the sealing keys. Records created before Since were written by an earlier version
// of the operator, or before the keys were lost: SealEarlierRecords judges them by their manifest
// once; any other record must carry a seal that verifies.
type Seal struct {
	mu      sync.RWMutex
	keys    map[string][]byte
	current string
	since   time.Time
	// refused says, per record UID, why SealEarlierRecords did not seal it (for its refusal).
	refused map[types.UID]string
}

// LoadSeal reads the key ring from the Secret name in namespace, and makes it with a first key
// when there is none.
func LoadSeal(ctx context.Context, c client.Client, namespace, name string) (*Seal, error) {
	ring := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, ring)
	if apierrors.IsNotFound(err) {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		ring = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{
				oplabels.ManagedBy: oplabels.Operator, oplabels.PartOf: oplabels.Operator}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{sealKeyPrefix + "1": key},
		}
		if err = c.Create(ctx, ring); apierrors.IsAlreadyExists(err) {
			err = c.Get(ctx, client.ObjectKeyFromObject(ring), ring)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("release records' sealing keys (Secret %s/%s): %w", namespace, name, err)
	}
	s := &Seal{refused: map[types.UID]string{}}
	if err := s.setRing(ring); err != nil {
		return nil, fmt.Errorf("release records' sealing keys (Secret %s/%s): %w", namespace, name, err)
	}
	return s, nil
}

// setRing takes the keys of the ring Secret.
func (s *Seal) setRing(ring *corev1.Secret) error {
	keys := map[string][]byte{}
	current, highest := "", 0
	for id, key := range ring.Data {
		n, err := strconv.Atoi(strings.TrimPrefix(id, sealKeyPrefix))
		if !strings.HasPrefix(id, sealKeyPrefix) || err != nil || n < 1 {
			return fmt.Errorf("key %q: keys are named %s<n>, n = 1, 2, ...", id, sealKeyPrefix)
		}
		if len(key) < 32 {
			return fmt.Errorf("key %q has %d bytes: at least 32 are needed", id, len(key))
		}
		keys[id] = key
		if n > highest {
			current, highest = id, n
		}
	}
	if current == "" {
		return errors.New("it holds no key")
	}
	s.mu.Lock()
	s.keys, s.current, s.since = keys, current, ring.CreationTimestamp.Time
	s.mu.Unlock()
	return nil
}

// Since is when the operator began sealing the records (the ring's creation).
func (s *Seal) Since() time.Time {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.since
}

// sign seals a record that the CR of UID owner controls.
func (s *Seal) sign(sec *corev1.Secret, owner types.UID) {
	s.mu.RLock()
	id, key := s.current, s.keys[s.current]
	s.mu.RUnlock()
	a := sec.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[oplabels.RecordSeal] = strings.Join([]string{sealFormat, id, base64.RawURLEncoding.EncodeToString(sealOf(key, sec, owner))}, ":")
	sec.SetAnnotations(a)
}

// verify returns the UID of the CR a record's seal binds it to, or why the seal does not hold.
func (s *Seal) verify(sec *corev1.Secret) (types.UID, error) {
	value, ok := sec.Annotations[oplabels.RecordSeal]
	if !ok {
		if why := s.refusedWhy(sec.UID); why != "" {
			return "", errors.New(why)
		}
		return "", errors.New("it carries no seal of this operator")
	}
	parts := strings.Split(value, ":")
	if len(parts) != 3 || parts[0] != sealFormat {
		return "", errors.New("its seal is not one this operator writes")
	}
	s.mu.RLock()
	key, known := s.keys[parts[1]]
	s.mu.RUnlock()
	if !known {
		return "", fmt.Errorf("it is sealed with key %s, which the operator does not hold", parts[1])
	}
	mac, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return "", errors.New("its seal is not one this operator writes")
	}
	ref := metav1.GetControllerOf(sec)
	if ref == nil {
		return "", errors.New("it has no controller")
	}
	if !hmac.Equal(mac, sealOf(key, sec, ref.UID)) {
		return "", errors.New("it was changed after the operator wrote it (its seal does not match)")
	}
	return ref.UID, nil
}

func (s *Seal) refusedWhy(uid types.UID) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.refused[uid]
}

func (s *Seal) noteRefused(uid types.UID, why string) {
	s.mu.Lock()
	s.refused[uid] = why
	s.mu.Unlock()
}

// sealOf is the HMAC-SHA256 of what a seal binds, each part length-prefixed.
func sealOf(key []byte, sec *corev1.Secret, owner types.UID) []byte {
	h := hmac.New(sha256.New, key)
	for _, part := range []string{"memcached-operator release record", sealFormat, sec.Namespace, sec.Name, string(owner), string(sec.Type),
		sec.Labels[library.RecordNameLabel], sec.Labels[library.RecordOwnerLabel], sec.Labels[library.RecordStatusLabel], sec.Labels[recordVersionLabel]} {
		fmt.Fprintf(h, "%d:%s;", len(part), part)
	}
	fmt.Fprintf(h, "%d:", len(sec.Data[recordDataKey]))
	h.Write(sec.Data[recordDataKey])
	return h.Sum(nil)
}

const (
	recordVersionLabel = "version" // Helm's Secrets driver: the revision
	recordDataKey      = "release" // Helm's Secrets driver: the encoded release
)

// sealedKeys are the ids of the keys in the ring, oldest first.
func (s *Seal) sealedKeys() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ids := make([]string, 0, len(s.keys))
	for id := range s.keys {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return keyNumber(a) - keyNumber(b) })
	return ids
}

func keyNumber(id string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(id, sealKeyPrefix))
	return n
}

// RecordRefusedError says that a release record failed the operator's check: it is not used for
// anything (no upgrade, uninstall or recovery reads it).
type RecordRefusedError struct {
	Namespace, Name string // the record's Secret
	Why             string
}

// ReasonRecordRefused is the reason of the CR's condition and Event when a record is refused.
const ReasonRecordRefused = "ReleaseRecordRefused"

func (e *RecordRefusedError) Error() string {
	return fmt.Sprintf("%s: release record Secret %s/%s is not used: %s. The operator acts only on release records it wrote and nobody changed; "+
		"if that Secret is not the operator's, delete it (kubectl -n %s delete secret %s): see docs/security.md#refused-release-records",
		ReasonRecordRefused, e.Namespace, e.Name, e.Why, e.Namespace, e.Name)
}

// admit returns a RecordRefusedError unless sec carries a seal of this operator that binds it to
// the CR owner.
func (s *Seal) admit(sec *corev1.Secret, owner types.UID) error {
	uid, err := s.verify(sec)
	if err == nil && uid != owner {
		err = errors.New("it was written for another resource of the same name")
	}
	if err != nil {
		return &RecordRefusedError{Namespace: sec.Namespace, Name: sec.Name, Why: err.Error()}
	}
	return nil
}
