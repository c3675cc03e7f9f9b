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
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
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
// of the operator, or before the keys were lost: SealRecords judges them by their manifest once;
// any other record must carry a seal that verifies.
type Seal struct {
	mu      sync.RWMutex
	keys    map[string][]byte
	current string
	since   time.Time
	// refused says, per record UID, why SealRecords did not seal it (for its refusal).
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
		ring = newRing(namespace, name, map[string][]byte{sealKeyPrefix + "1": key}, time.Now())
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

// newRing is a key ring Secret holding keys, the operator sealing since since.
func newRing(namespace, name string, keys map[string][]byte, since time.Time) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
			Labels:      map[string]string{oplabels.ManagedBy: oplabels.Operator, oplabels.PartOf: oplabels.Operator},
			Annotations: map[string]string{oplabels.SealingSince: since.UTC().Format(time.RFC3339)}},
		Type: corev1.SecretTypeOpaque,
		Data: keys,
	}
}

// setRing takes the keys of the ring Secret, and when the operator began sealing: the ring's
// annotation (which a ring written again keeps), else its creation.
func (s *Seal) setRing(ring *corev1.Secret) error {
	keys := map[string][]byte{}
	current, highest := "", 0
	for id, key := range ring.Data {
		n, err := strconv.Atoi(strings.TrimPrefix(id, sealKeyPrefix))
		if !strings.HasPrefix(id, sealKeyPrefix) || err != nil || n < 1 {
			return fmt.Errorf("key %q: keys are named %s<n> for n = 1, 2 and so on", id, sealKeyPrefix)
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
	since := ring.CreationTimestamp.Time
	if at, err := time.Parse(time.RFC3339, ring.Annotations[oplabels.SealingSince]); err == nil && at.Before(since) {
		since = at
	}
	s.mu.Lock()
	s.keys, s.current, s.since = keys, current, since
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

// verify returns the UID of the CR a record's seal binds it to and the key that sealed it, or
// why the seal does not hold.
func (s *Seal) verify(sec *corev1.Secret) (types.UID, string, error) {
	value, ok := sec.Annotations[oplabels.RecordSeal]
	if !ok {
		if why := s.refusedWhy(sec.UID); why != "" {
			return "", "", errors.New(why)
		}
		return "", "", errors.New("it carries no seal of this operator")
	}
	parts := strings.Split(value, ":")
	if len(parts) != 3 || parts[0] != sealFormat {
		return "", "", errors.New("its seal is not one this operator writes")
	}
	s.mu.RLock()
	key, known := s.keys[parts[1]]
	s.mu.RUnlock()
	if !known {
		return "", "", fmt.Errorf("it is sealed with key %s, which the operator does not hold", parts[1])
	}
	mac, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return "", "", errors.New("its seal is not one this operator writes")
	}
	ref := metav1.GetControllerOf(sec)
	if ref == nil {
		return "", "", errors.New("it has no controller")
	}
	if !hmac.Equal(mac, sealOf(key, sec, ref.UID)) {
		return "", "", errors.New("it was changed after the operator wrote it (its seal does not match)")
	}
	return ref.UID, parts[1], nil
}

// holds reports whether the ring still holds the key id.
func (s *Seal) holds(id string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.keys[id]
	return ok
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
	uid, _, err := s.verify(sec)
	if err == nil && uid != owner {
		err = errors.New("it was written for another resource of the same name")
	}
	if err != nil {
		return &RecordRefusedError{Namespace: sec.Namespace, Name: sec.Name, Why: err.Error()}
	}
	return nil
}

// RingWatch follows the key ring Secret while the operator runs, so that keys rotate without a
// restart: a key added (key-<n+1>) seals from then on, the records sealed with older keys are
// sealed again with it (Reseal), and then the ring is annotated with the key every record
// carries (oplabels.RecordsSealedWith): older keys may be removed from then on. A ring deleted is
// written again with the keys the operator holds, so that records stay verifiable after a restart.
type RingWatch struct {
	Seal            *Seal
	Namespace, Name string
	// Secrets watches the ring; Client writes it.
	Secrets kubernetes.Interface
	Client  client.Client
	// Reseal seals the records sealed with older keys with the newest (SealRecords).
	Reseal func(context.Context) (SealedRecords, error)
}

// resealRetry is how soon a reseal that left records sealed with older keys is tried again.
var resealRetry = time.Minute

// Start runs the watch until ctx ends (a manager.Runnable).
func (w *RingWatch) Start(ctx context.Context) error {
	log := ctrl.Log.WithName("release-seal")
	resealNow := make(chan struct{}, 1)
	trigger := func() {
		select {
		case resealNow <- struct{}{}:
		default:
		}
	}
	lw := toolscache.NewListWatchFromClient(w.Secrets.CoreV1().RESTClient(), "secrets", w.Namespace, fields.OneTermEqualSelector("metadata.name", w.Name))
	informer := toolscache.NewSharedIndexInformer(lw, &corev1.Secret{}, 0, toolscache.Indexers{})
	changed := func(obj any) {
		ring, ok := obj.(*corev1.Secret)
		if !ok {
			return
		}
		if err := w.Seal.setRing(ring); err != nil {
			log.Error(err, "the key ring is not taken: the operator keeps sealing with the keys it holds", "secret", w.Namespace+"/"+w.Name, "key", w.Seal.Current())
			return
		}
		if ring.Annotations[oplabels.RecordsSealedWith] != w.Seal.Current() {
			trigger()
		}
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, obj any) { changed(obj) },
		DeleteFunc: func(any) {
			if err := w.rewrite(ctx); err != nil {
				log.Error(err, "the key ring was deleted and could not be written again", "secret", w.Namespace+"/"+w.Name)
			} else {
				log.Info("the key ring was deleted: written again with the keys the operator holds", "secret", w.Namespace+"/"+w.Name)
			}
		},
	}); err != nil {
		return err
	}
	go informer.RunWithContext(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-resealNow:
		}
		current := w.Seal.Current()
		done, err := w.Reseal(ctx)
		switch {
		case err != nil:
			log.Error(err, "sealing the release records with the newest key", "key", current)
		case done.Older > 0:
			log.Info("release records are still sealed with older keys: tried again soon; keep the older keys until the ring says "+oplabels.RecordsSealedWith+"="+current,
				"key", current, "resealed", done.Resealed, "left", done.Older)
		default:
			err = w.annotate(ctx, current)
			if err == nil {
				log.Info("every release record is sealed with the newest key: older keys may be removed from the ring", "key", current, "resealed", done.Resealed)
				continue
			}
			log.Error(err, "annotating the key ring", "secret", w.Namespace+"/"+w.Name)
		}
		time.AfterFunc(resealRetry, trigger)
	}
}

// annotate says on the ring which key every record carries.
func (w *RingWatch) annotate(ctx context.Context, key string) error {
	ring := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name}}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, oplabels.RecordsSealedWith, key)
	return w.Client.Patch(ctx, ring, client.RawPatch(types.MergePatchType, patch))
}

// rewrite writes the ring again with the keys the operator holds, and when it began sealing.
func (w *RingWatch) rewrite(ctx context.Context) error {
	w.Seal.mu.RLock()
	data := make(map[string][]byte, len(w.Seal.keys))
	for id, key := range w.Seal.keys {
		data[id] = key
	}
	since := w.Seal.since
	w.Seal.mu.RUnlock()
	return client.IgnoreAlreadyExists(w.Client.Create(ctx, newRing(w.Namespace, w.Name, data, since)))
}
