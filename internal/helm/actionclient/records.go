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
	"crypto/sha256"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

// Records holds the decoded release of every record in the manager's cache, so the cache keeps
// only the records' metadata: the cache's Transform (CacheTransform) decodes a record as it
// arrives and drops its data, the store (ReleaseStore) reads the decoded form. A record's
// encoded data (base64 of gzipped JSON, its chart's metadata and values included) is about as
// large as its decoded form; holding both doubled what release records cost.
//
// It keeps two versions of each record: the cache's transform runs when a watch event is queued,
// a moment before the cache's store shows the new version. A version it no longer holds is read
// from the API server (errNotDecoded).
type Records struct {
	mu   sync.Mutex
	byID map[types.UID][2]decodedRelease // the newest version, then the one before
	// charts holds one copy of each chart the decoded records carry: every record holds a copy of
	// its chart, the same for all releases of a chart version (this operator's records its
	// metadata and values, slim; those of earlier versions the whole chart).
	charts map[[sha256.Size]byte]*chart.Chart
	// seal checks each record's seal when its data is decoded (UseSeal); nil: no record holds.
	seal *Seal
}

type decodedRelease struct {
	resourceVersion string
	rel             *release.Release // nil when the seal does not hold: never decoded
	// sealedFor is the UID of the CR the record's seal binds it to and sealedWith the key, or
	// sealErr why it has no seal that holds: checked on the version's data, before decoding it.
	sealedFor  types.UID
	sealedWith string
	sealErr    error
}

// UseSeal makes the memo check each record's seal with s as it decodes it: before the cache's
// Secret informer starts, so that every record it holds was checked.
func (r *Records) UseSeal(s *Seal) {
	r.mu.Lock()
	r.seal = s
	r.mu.Unlock()
}

// errNoSeal: no sealing keys were loaded (UseSeal), so no record verifies.
var errNoSeal = errors.New("the operator has not loaded its sealing keys")

// admit returns a RecordRefusedError unless the record carries a seal of this operator, checked on
// the data of its version, with a key the operator still holds, that binds it to the CR owner;
// errNotDecoded when the memo does not hold this version and the cache dropped its data.
func (r *Records) admit(sec *corev1.Secret, owner types.UID) error {
	r.mu.Lock()
	d, ok := r.lookup(sec)
	seal := r.seal
	r.mu.Unlock()
	if seal == nil {
		return &RecordRefusedError{Namespace: sec.Namespace, Name: sec.Name, Why: errNoSeal.Error()}
	}
	if !ok {
		if sec.Data[recordDataKey] == nil {
			return errNotDecoded
		}
		return seal.admit(sec, owner)
	}
	why := d.sealErr
	switch {
	case why != nil:
	case !seal.holds(d.sealedWith):
		why = fmt.Errorf("it is sealed with key %s, which the operator no longer holds", d.sealedWith)
	case d.sealedFor != owner:
		why = errors.New("it was written for another resource of the same name")
	}
	if why != nil {
		return &RecordRefusedError{Namespace: sec.Namespace, Name: sec.Name, Why: why.Error()}
	}
	return nil
}

// NewRecords is an empty memo of decoded release records.
func NewRecords() *Records {
	return &Records{byID: map[types.UID][2]decodedRelease{}, charts: map[[sha256.Size]byte]*chart.Chart{}}
}

// errNotDecoded: the record reached the cache without its data, and its decoded form is gone.
var errNotDecoded = errors.New("release record not decoded")

// CacheTransform is the manager cache's transform of Secrets: a release record this operator
// wrote (RecordSelector) is decoded into the memo and kept without its data; any other Secret,
// and a record that does not decode (Helm's reads report it), is kept as it is. next runs first
// (nil: none).
func (r *Records) CacheTransform(next toolscache.TransformFunc) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		if next != nil {
			var err error
			if obj, err = next(obj); err != nil {
				return nil, err
			}
		}
		sec, ok := obj.(*corev1.Secret)
		if !ok || sec.Data[recordDataKey] == nil || !RecordSelector().Matches(labels.Set(sec.Labels)) {
			return obj, nil
		}
		r.mu.Lock()
		sealed := r.seal != nil
		r.mu.Unlock()
		if !sealed {
			return obj, nil // checked and decoded on its first read, once the keys are loaded
		}
		_, err := r.decode(sec)
		var refused *RecordRefusedError
		if err != nil && !errors.As(err, &refused) {
			return obj, nil // Helm's reads report what does not decode
		}
		sec.Data = nil // decoded, or refused: either way the memo says so
		return sec, nil
	}
}

// Forget drops the decoded versions of a record the cache no longer holds (an informer's delete).
func (r *Records) Forget(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if sec, ok := obj.(*corev1.Secret); ok {
		r.mu.Lock()
		delete(r.byID, sec.UID)
		r.mu.Unlock()
	}
}

// decode returns the release of a record, decoded once per resourceVersion: from the memo, or
// from its data. Callers get their own Release and Info (Helm changes a release's status in place
// before writing it back); the chart (one copy for all releases of a chart version), values and
// manifest are shared and never changed.
func (r *Records) decode(sec *corev1.Secret) (*release.Release, error) {
	r.mu.Lock()
	d, ok := r.lookup(sec)
	seal := r.seal
	r.mu.Unlock()
	if !ok {
		if sec.Data[recordDataKey] == nil {
			return nil, errNotDecoded
		}
		if seal == nil {
			rel, err := decodeRecord(sec.Data[recordDataKey]) // not kept: unchecked
			if err != nil {
				return nil, fmt.Errorf("decode release record %s: %w", sec.Name, err)
			}
			return rel, nil
		}
		// The seal first: a record that is not the operator's is never decompressed.
		d = decodedRelease{resourceVersion: sec.ResourceVersion}
		d.sealedFor, d.sealedWith, d.sealErr = seal.verify(sec)
		if d.sealErr == nil {
			rel, err := decodeRecord(sec.Data[recordDataKey])
			if err != nil {
				return nil, fmt.Errorf("decode release record %s: %w", sec.Name, err)
			}
			chartKey, err := hashChart(rel.Chart)
			if err != nil {
				return nil, fmt.Errorf("decode release record %s: %w", sec.Name, err)
			}
			d.rel = rel
			r.mu.Lock()
			if shared, ok := r.charts[chartKey]; ok {
				rel.Chart = shared
			} else if rel.Chart != nil {
				if len(r.charts) >= maxCharts {
					clear(r.charts)
				}
				r.charts[chartKey] = rel.Chart
			}
			r.mu.Unlock()
		}
		r.mu.Lock()
		if versions := r.byID[sec.UID]; versions[0].resourceVersion != sec.ResourceVersion {
			if d.rel != nil {
				shareUnchanged(d.rel, versions[0].rel)
			}
			r.byID[sec.UID] = [2]decodedRelease{d, versions[0]}
		}
		r.mu.Unlock()
	}
	if d.rel == nil {
		return nil, &RecordRefusedError{Namespace: sec.Namespace, Name: sec.Name, Why: d.sealErr.Error()}
	}
	rel := *d.rel
	if d.rel.Info != nil {
		info := *d.rel.Info
		rel.Info = &info
	}
	rel.Labels = make(map[string]string, len(sec.Labels))
	for k, v := range sec.Labels {
		rel.Labels[k] = v
	}
	return &rel, nil
}

// shareUnchanged makes rel share with the version before it (nil: none) what did not change
// between them: Helm rewrites a record to change only its status (pending, then deployed;
// deployed, then superseded), and the two versions held would otherwise hold the manifest and
// values twice, most of a decoded record.
func shareUnchanged(rel, before *release.Release) {
	if before == nil || rel.Name != before.Name || rel.Version != before.Version {
		return
	}
	if rel.Manifest == before.Manifest {
		rel.Manifest = before.Manifest
	}
	if reflect.DeepEqual(rel.Config, before.Config) {
		rel.Config = before.Config
	}
	if rel.Info != nil && before.Info != nil && rel.Info.Notes == before.Info.Notes {
		rel.Info.Notes = before.Info.Notes
	}
}

// lookup finds the decoded version of sec; r.mu is held.
func (r *Records) lookup(sec *corev1.Secret) (decodedRelease, bool) {
	for _, d := range r.byID[sec.UID] {
		if (d.rel != nil || d.sealErr != nil) && d.resourceVersion == sec.ResourceVersion {
			return d, true
		}
	}
	return decodedRelease{}, false
}

// size is the number of records whose decoded form is held.
func (r *Records) size() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byID)
}
