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
	"errors"
	"reflect"
	"testing"
	"unsafe"

	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	oplabels "github.com/example/memcached-operator/internal/labels"
)

// The cache keeps this operator's records as metadata; their decoded form is in the memo.
func TestCacheTransformKeepsRecordsDecoded(t *testing.T) {
	r := unitRecords()
	transform := r.CacheTransform(nil)

	ours := recordSecret(t, &release.Release{Name: "foo", Version: 1, Manifest: "kind: Deployment"}, "uid-1")
	ours.Labels[oplabels.Record] = oplabels.Operator
	out, err := transform(ours.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	cached := out.(*corev1.Secret)
	if cached.Data != nil {
		t.Errorf("the cache keeps the record's data: %d keys", len(cached.Data))
	}
	rel, err := r.decode(cached)
	if err != nil || rel.Manifest != "kind: Deployment" {
		t.Fatalf("decode of the cached record = %v, %v", rel, err)
	}

	foreign := recordSecret(t, &release.Release{Name: "theirs", Version: 1}, "uid-2") // another Helm's record
	out, err = transform(foreign.DeepCopy())
	if err != nil || out.(*corev1.Secret).Data == nil {
		t.Errorf("a record of another Helm lost its data (err %v)", err)
	}

	// Sealed, yet not a release (no operator writes one): kept for Helm's reads to report. A
	// record changed after its sealing is refused, and never decoded (seal_test.go).
	bad := ours.DeepCopy()
	bad.UID, bad.Data["release"] = "uid-3", []byte("not base64!")
	unitSeal.sign(bad, unitOwner)
	out, err = transform(bad)
	if err != nil || out.(*corev1.Secret).Data == nil {
		t.Errorf("a record that does not decode lost its data, which Helm's reads report (err %v)", err)
	}
}

// Two versions of a record are held (the cache's store shows a new version a moment after its
// transform ran); an older one is read from the API server, and a deleted record is forgotten.
func TestRecordsVersions(t *testing.T) {
	r := unitRecords()
	transform := r.CacheTransform(nil)
	var versions []*corev1.Secret
	for _, rv := range []string{"1", "2", "3"} {
		sec := recordSecret(t, &release.Release{Name: "foo", Version: 1, Manifest: "rv " + rv}, "uid")
		sec.Labels[oplabels.Record] = oplabels.Operator
		sec.ResourceVersion = rv
		out, err := transform(&sec)
		if err != nil {
			t.Fatal(err)
		}
		versions = append(versions, out.(*corev1.Secret))
	}
	for i, want := range []string{"", "rv 2", "rv 3"} {
		rel, err := r.decode(versions[i])
		switch {
		case want == "" && !errors.Is(err, errNotDecoded):
			t.Errorf("version %d: decode = %v, %v; want errNotDecoded (read it from the API server)", i+1, rel, err)
		case want != "" && (err != nil || rel.Manifest != want):
			t.Errorf("version %d: decode = %v, %v; want %q", i+1, rel, err, want)
		}
	}
	r.Forget(toolscache.DeletedFinalStateUnknown{Obj: versions[2]})
	if r.size() != 0 {
		t.Errorf("a deleted record is still held")
	}
}

// A record rewritten to change its status only (pending, then deployed) holds its manifest and
// values once for both versions.
func TestRecordsShareWhatDidNotChange(t *testing.T) {
	r := unitRecords()
	transform := r.CacheTransform(nil)
	var held []*release.Release
	for i, status := range []release.Status{release.StatusPendingInstall, release.StatusDeployed} {
		rel := &release.Release{Name: "foo", Version: 1, Manifest: "kind: Deployment",
			Config: map[string]any{"replicaCount": 3}, Info: &release.Info{Status: status, Notes: "notes"}}
		sec := recordSecret(t, rel, "uid")
		sec.Labels[oplabels.Record] = oplabels.Operator
		sec.ResourceVersion = string(rune('1' + i))
		out, err := transform(&sec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.decode(out.(*corev1.Secret))
		if err != nil || got.Info.Status != status {
			t.Fatalf("decode = %v, %v", got, err)
		}
		held = append(held, got)
	}
	pending, deployed := held[0], held[1]
	if unsafe.StringData(pending.Manifest) != unsafe.StringData(deployed.Manifest) {
		t.Errorf("the two versions hold the manifest twice")
	}
	if reflect.ValueOf(pending.Config).UnsafePointer() != reflect.ValueOf(deployed.Config).UnsafePointer() {
		t.Errorf("the two versions hold the values twice")
	}
	if unsafe.StringData(pending.Info.Notes) != unsafe.StringData(deployed.Info.Notes) {
		t.Errorf("the two versions hold the notes twice")
	}
}
