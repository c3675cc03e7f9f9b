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
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/memcached-operator/internal/helm/library"
	oplabels "github.com/example/memcached-operator/internal/labels"
)

// RecordSelector selects the release records this operator wrote.
func RecordSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{library.RecordOwnerLabel: library.RecordOwner, oplabels.Record: oplabels.Operator})
}

// ReleaseStore serves Helm's release records from the manager's cache of the records this
// operator wrote (RecordSelector, which the Helm reconciler watches anyway; indexed with
// IndexReleaseRecords), decoding each record once per resourceVersion. Helm's own Secrets driver LISTs the release's Secrets from the API server
// and decodes every revision (base64, gunzip, JSON) on every read, which is most of what a
// periodic reconcile costs once rendering is skipped.
//
// Writes go to the API server. Until the cache shows a record as this operator last wrote it,
// reads of that release go to the API server too: a reconcile never sees its release older than
// the previous reconcile left it.
//
// Every record read is checked against its seal (seal.go), and every record written is sealed: a
// record that fails is never used, and the read fails with a RecordRefusedError.
type ReleaseStore struct {
	cache   client.Reader
	records *Records // the decoded records (the cache holds their metadata)
	seal    *Seal

	mu sync.Mutex
	// written holds, per release (namespace and name), each record Secret's resourceVersion this
	// operator last wrote ("" for deleted) until the cache shows it: by release, since a read
	// looks at its release's only, and SealRecords may hand over one for every release at once.
	written map[types.NamespacedName]map[string]string
	secrets kubernetes.Interface
}

// NewReleaseStore reads release Secrets through cache (the manager's client), whose records
// records decodes (Records.CacheTransform, or on first read when the cache keeps their data;
// nil: a memo of the store's own) and checks with seal, which also seals what it writes.
// Records.Forget must see the cache's deletions.
func NewReleaseStore(cache client.Reader, records *Records, seal *Seal) *ReleaseStore {
	if records == nil {
		records = NewRecords()
	}
	records.UseSeal(seal)
	return &ReleaseStore{cache: cache, records: records, seal: seal, written: map[types.NamespacedName]map[string]string{}}
}

// DriverFor is a helmclient.ObjectToStorageDriverMapper: the storage of one CR's release, whose
// records it owns (as the library's default Secrets driver sets them).
func (s *ReleaseStore) DriverFor(_ context.Context, obj client.Object, cfg *rest.Config) (driver.Driver, error) {
	s.mu.Lock()
	if s.secrets == nil {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("create secrets client for storage: %w", err)
		}
		s.secrets = cs
	}
	cs := s.secrets
	s.mu.Unlock()
	ns := obj.GetNamespace()
	owner := metav1.NewControllerRef(obj, obj.GetObjectKind().GroupVersionKind())
	recorded := recordingSecrets{SecretInterface: cs.CoreV1().Secrets(ns), store: s, seal: s.seal, namespace: ns, owner: *owner}
	return &storeDriver{Secrets: driver.NewSecrets(recorded), store: s, namespace: ns, owner: obj.GetUID(), anyones: cs.CoreV1().Secrets(ns)}, nil
}

// storeDriver is Helm's Secrets driver with its reads served by the store.
type storeDriver struct {
	*driver.Secrets // writes, and reads while the cache lags
	store           *ReleaseStore
	namespace       string
	owner           types.UID                    // the CR's, which the records' seals must name
	anyones         corev1client.SecretInterface // the namespace's Secrets, whoever made them

	// A driver serves one reconcile's action client. unwritten is the key of a first install's
	// record that Create held back (Helm's update of it at the install's end creates it);
	// unrecorded is why that create failed, which Helm only logs.
	unwritten  string
	unrecorded error
	// free is the answer of the read that checks a first install's record name is free, started
	// when the install starts (checkFree), so that it overlaps the render.
	free *freeCheck
}

// freeCheck is a read of a record name, started ahead: err, once done is closed, is nil when no
// Secret of that name exists.
type freeCheck struct {
	key  string
	done chan struct{}
	err  error
}

// checkFree starts the read that Create makes of a first install's record name (key): Helm
// renders the chart meanwhile, which takes as long as the read, and Create then waits for the
// answer instead of asking. Nothing is touched before the answer either way; an install that
// fails before Create (its render) has made one read for nothing.
func (d *storeDriver) checkFree(key string) {
	c := &freeCheck{key: key, done: make(chan struct{})}
	d.free = c
	go func() {
		defer close(c.done)
		switch _, err := d.anyones.Get(context.Background(), key, metav1.GetOptions{}); {
		case err == nil:
			c.err = driver.ErrReleaseExists
		case !apierrors.IsNotFound(err):
			c.err = fmt.Errorf("check that release record %s is free: %w", key, err)
		}
	}()
}

const recordPrefix = "sh.helm.release.v1."

// recordKey is the key of a release's record of a revision, as Helm's storage makes it.
func recordKey(name string, revision int) string {
	return fmt.Sprintf("%s%s.v%d", recordPrefix, name, revision)
}

// releaseOf is the release name of a record key (sh.helm.release.v1.<name>.v<revision>).
func releaseOf(key string) string {
	name := strings.TrimPrefix(key, recordPrefix)
	if i := strings.LastIndex(name, ".v"); i >= 0 {
		return name[:i]
	}
	return name
}

func (d *storeDriver) Get(key string) (*release.Release, error) {
	list, err := d.cached(map[string]string{library.RecordOwnerLabel: library.RecordOwner, library.RecordNameLabel: releaseOf(key)})
	if err != nil || list == nil {
		return d.Secrets.Get(key)
	}
	for i := range list {
		if list[i].Name == key {
			if err := d.store.records.admit(&list[i], d.owner); err != nil {
				if errors.Is(err, errNotDecoded) {
					return d.Secrets.Get(key)
				}
				return nil, err
			}
			rel, err := d.store.records.decode(&list[i])
			if errors.Is(err, errNotDecoded) {
				return d.Secrets.Get(key)
			}
			return rel, err
		}
	}
	return nil, driver.ErrReleaseNotFound
}

func (d *storeDriver) Query(labels map[string]string) ([]*release.Release, error) {
	list, err := d.cached(labels)
	if err != nil || list == nil {
		return d.Secrets.Query(labels)
	}
	if len(list) == 0 {
		return nil, driver.ErrReleaseNotFound
	}
	var out []*release.Release
	for i := range list {
		// One refused record refuses the query: Helm would otherwise work from the others, and
		// the next revision it writes could collide with the refused one.
		if err := d.store.records.admit(&list[i], d.owner); err != nil {
			if errors.Is(err, errNotDecoded) {
				return d.Secrets.Query(labels)
			}
			return nil, err
		}
		rel, err := d.store.records.decode(&list[i])
		if errors.Is(err, errNotDecoded) {
			return d.Secrets.Query(labels)
		}
		if err != nil {
			continue // as Helm's driver: an undecodable record is skipped
		}
		out = append(out, rel)
	}
	return out, nil
}

// Create and Update write a release's record with its chart's metadata and default values only.
// Nothing reads more of a recorded chart: helm list, history, get (values with --all too) and
// rollback, and the operator's checks of a release's chart version. The templates and the values
// schema, which the operator's image holds, were 60% of each record, written twice per install.
//
// A first install's pending record is not written: Helm's first update of it (at the install's
// end: deployed or failed) creates it, one write of the record instead of two. An install cut off
// before its end leaves what recoverPending makes of a pending first install: no record, and
// objects carrying the release's marks, which the next install adopts (or the CR's deletion
// removes with their owner). What the pending record's create also did, claim the name before
// any object is touched, a read does: a record of that name that someone else made (the helm
// CLI's) refuses the install as Helm's create would have (ErrReleaseExists), before Helm adopts
// the objects it annotated. One made between that read and the install's end refuses the record's
// create, and every later write of it: nothing of theirs is overwritten. Helm only logs that; the
// operator's Install reports it (unrecorded).
//
// One thing the pending record did is gone: telling a process that took the leader lock over
// from another still running (internal/leader) that this install is in progress. Both then may
// install the release at once; the second meets the first's objects (adopted, or AlreadyExists,
// whose failed record is dropped) and the next reconcile adopts what either made. The chaos
// suite's split scenario runs that case.
func (d *storeDriver) Create(key string, rel *release.Release) error {
	if rel.Version != 1 || rel.Info == nil || rel.Info.Status != release.StatusPendingInstall {
		return d.Secrets.Create(key, slim(rel))
	}
	if d.free == nil || d.free.key != key {
		d.checkFree(key)
	}
	check := d.free
	d.free = nil
	<-check.done
	if check.err != nil {
		return check.err
	}
	d.unwritten, d.unrecorded = key, nil
	return nil
}

func (d *storeDriver) Update(key string, rel *release.Release) error {
	switch {
	case key != d.unwritten:
		return d.Secrets.Update(key, slim(rel))
	case d.unrecorded != nil:
		return d.unrecorded // the held record's create failed: never update what may be someone else's
	}
	if d.unrecorded = d.Secrets.Create(key, slim(rel)); d.unrecorded != nil {
		return d.unrecorded
	}
	d.unwritten = ""
	return nil
}

// unrecorded is why the record of the first install that driver d (the action's) held back could
// not be written (nil: it was, or none was held). Helm only logs it, and reports an install that
// succeeded otherwise done.
func unrecorded(d driver.Driver) error {
	if sd, ok := d.(*storeDriver); ok {
		return sd.unrecorded
	}
	return nil
}

// slim is rel, for its record: its chart without templates, schema and files. Helm keeps working
// on rel itself. (A record never held a chart's subcharts: Helm's JSON of a chart leaves them out.)
func slim(rel *release.Release) *release.Release {
	if rel == nil || rel.Chart == nil {
		return rel
	}
	out := *rel
	out.Chart = &chart.Chart{Metadata: rel.Chart.Metadata, Lock: rel.Chart.Lock, Values: rel.Chart.Values}
	return &out
}

// ReleaseNameIndex indexes the cached release records by release name (IndexReleaseRecords).
const ReleaseNameIndex = "helm.sh/release-name"

// IndexReleaseRecords adds ReleaseNameIndex to the manager's cache of Secrets: a release's records
// are then found without scanning every record of the namespace, which made each read O(releases).
func IndexReleaseRecords(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &corev1.Secret{}, ReleaseNameIndex, func(o client.Object) []string {
		if l := o.GetLabels(); l[library.RecordOwnerLabel] == library.RecordOwner && l[library.RecordNameLabel] != "" {
			return []string{l["name"]}
		}
		return nil
	})
}

// DeployedRevision is the revision of the release of the CR cr that is deployed, read from reader
// (the manager's cache of release records, indexed with IndexReleaseRecords) and counting only
// records whose seal names cr (checked when records decoded them); 0 when none is.
func (r *Records) DeployedRevision(ctx context.Context, reader client.Reader, cr client.Object) (int32, error) {
	namespace, name := cr.GetNamespace(), cr.GetName()
	list := &corev1.SecretList{}
	if err := reader.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{ReleaseNameIndex: name},
		client.MatchingLabels{library.RecordOwnerLabel: library.RecordOwner, library.RecordNameLabel: name, library.RecordStatusLabel: release.StatusDeployed.String(), oplabels.Record: oplabels.Operator}); err != nil {
		return 0, fmt.Errorf("list the records of release %s/%s: %w", namespace, name, err)
	}
	var revision int32
	for i := range list.Items {
		s := &list.Items[i]
		if r.admit(s, cr.GetUID()) != nil {
			continue // refused, or not decoded yet: the record's event brings the caller back
		}
		if v, err := strconv.ParseInt(s.Labels[recordVersionLabel], 10, 32); err == nil && int32(v) > revision {
			revision = int32(v)
		}
	}
	return revision, nil
}

// Release is revision version of the release of the CR cr, decoded from its record in reader (the
// manager's cache of release records) when the record's seal names cr; nil when there is no such
// record, it is refused, or its decoded form is not held (the record's next event brings the
// caller back). Callers must not change it: the memo shares it.
func (r *Records) Release(ctx context.Context, reader client.Reader, cr client.Object, version int32) (*release.Release, error) {
	namespace, name := cr.GetNamespace(), cr.GetName()
	list := &corev1.SecretList{}
	if err := reader.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{ReleaseNameIndex: name},
		client.MatchingLabels{library.RecordOwnerLabel: library.RecordOwner, library.RecordNameLabel: name,
			recordVersionLabel: strconv.Itoa(int(version)), oplabels.Record: oplabels.Operator}); err != nil {
		return nil, fmt.Errorf("list the records of release %s/%s: %w", namespace, name, err)
	}
	for i := range list.Items {
		s := &list.Items[i]
		if r.admit(s, cr.GetUID()) != nil {
			continue
		}
		r.mu.Lock()
		d, ok := r.lookup(s)
		r.mu.Unlock()
		if ok && d.rel != nil {
			return d.rel, nil
		}
	}
	return nil, nil
}

// cached lists the records with these labels from the cache, or returns nil when the cache has
// not caught up with this operator's writes of that release (or the labels name no release).
func (d *storeDriver) cached(labels map[string]string) ([]corev1.Secret, error) {
	name := labels["name"]
	if name == "" || labels[library.RecordOwnerLabel] != library.RecordOwner {
		return nil, nil
	}
	list := &corev1.SecretList{}
	if err := d.store.cache.List(context.Background(), list, client.InNamespace(d.namespace),
		client.MatchingFields{ReleaseNameIndex: name}, client.MatchingLabels(labels), client.MatchingLabels{oplabels.Record: oplabels.Operator}); err != nil {
		return nil, err
	}
	if !d.store.caughtUp(d.namespace, name, list.Items) {
		return nil, nil
	}
	if list.Items == nil {
		list.Items = []corev1.Secret{}
	}
	return list.Items, nil
}

// unseenRecord returns an error naming a record of release name that the API server holds,
// sealed for this driver's CR, which the operator's cached reads did not show: the cache lags
// behind a write this process's store did not make (a record of an earlier version, sealed at
// start-up a moment before the first reconcile). Records that are not this CR's sealed ones
// (someone else's, forged) are not its release: they hold nothing.
func (d *storeDriver) unseenRecord(ctx context.Context, name string) error {
	sel := labels.SelectorFromSet(labels.Set{library.RecordOwnerLabel: library.RecordOwner, library.RecordNameLabel: name, oplabels.Record: oplabels.Operator})
	list, err := d.anyones.List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return fmt.Errorf("release %s: check that no record of it exists that the operator's reads did not show: %w", name, err)
	}
	for i := range list.Items {
		if d.store.records.admit(&list.Items[i], d.owner) == nil {
			return fmt.Errorf("release %s: its record %s exists, but the operator's reads do not show it yet; the uninstall is tried again", name, list.Items[i].Name)
		}
	}
	return nil
}

// caughtUp reports whether the cached records of a release show every write this operator made
// to them, and forgets the writes the cache shows.
func (s *ReleaseStore) caughtUp(namespace, name string, cached []corev1.Secret) bool {
	release := types.NamespacedName{Namespace: namespace, Name: name}
	s.mu.Lock()
	defer s.mu.Unlock()
	writes := s.written[release]
	if len(writes) == 0 {
		return true
	}
	have := make(map[string]string, len(cached))
	for _, sec := range cached {
		have[sec.Name] = sec.ResourceVersion
	}
	for record, rv := range writes {
		if got, present := have[record]; (rv == "" && !present) || (rv != "" && got == rv) {
			delete(writes, record)
		}
	}
	if len(writes) > 0 {
		return false
	}
	delete(s.written, release)
	return true
}

// Wrote says that records were written outside the store (SealRecords' seals, by record, at
// the resourceVersion written): the store's reads of their releases go to the API server until
// the cache shows them, as after its own writes.
func (s *ReleaseStore) Wrote(written map[types.NamespacedName]string) {
	for key, rv := range written {
		s.wrote(key.Namespace, key.Name, rv)
	}
}

// wrote notes the resourceVersion written of record Secret name ("" deleted) in namespace.
func (s *ReleaseStore) wrote(namespace, name, resourceVersion string) {
	release := types.NamespacedName{Namespace: namespace, Name: releaseOf(name)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written[release] == nil {
		s.written[release] = map[string]string{}
	}
	s.written[release][name] = resourceVersion
}

// maxCharts bounds the shared charts (one per chart version the releases were made with).
const maxCharts = 64

// hashChart identifies a chart by its content.
func hashChart(c *chart.Chart) ([sha256.Size]byte, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256(raw), nil
}

// maxDecodedRecord bounds what a record unzips to: a record is at most 1 MiB (a Secret's
// limit), the operator's unzip to a few hundred kB, and a record that unzips to gigabytes would
// end the operator.
const maxDecodedRecord = 32 << 20

// decodeRecord decodes a release record as Helm's Secrets driver stores it: base64 of (usually
// gzipped) JSON.
func decodeRecord(data []byte) (*release.Release, error) {
	b, err := base64.StdEncoding.DecodeString(string(data))
	if err != nil {
		return nil, err
	}
	if len(b) > 3 && bytes.Equal(b[0:3], []byte{0x1f, 0x8b, 0x08}) {
		r, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		defer r.Close()
		if b, err = io.ReadAll(io.LimitReader(r, maxDecodedRecord+1)); err != nil {
			return nil, err
		}
		if len(b) > maxDecodedRecord {
			return nil, fmt.Errorf("it unzips to more than %d MiB", maxDecodedRecord>>20)
		}
	}
	var rel release.Release
	return &rel, json.Unmarshal(b, &rel)
}
