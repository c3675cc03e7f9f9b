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
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	oplabels "github.com/example/memcached-operator/internal/labels"
)

func cachedRecord(name, rv string) corev1.Secret {
	return corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: rv}}
}

// A release is read from the cache only once the cache shows what this operator wrote of it.
func TestCaughtUp(t *testing.T) {
	for _, tc := range []struct {
		name    string
		written map[string]string // record -> resourceVersion written ("" deleted)
		cached  []corev1.Secret
		want    bool
	}{
		{"nothing written", nil, []corev1.Secret{cachedRecord("sh.helm.release.v1.foo.v1", "3")}, true},
		{"cache shows the write", map[string]string{"sh.helm.release.v1.foo.v2": "5"},
			[]corev1.Secret{cachedRecord("sh.helm.release.v1.foo.v1", "3"), cachedRecord("sh.helm.release.v1.foo.v2", "5")}, true},
		{"cache has an older version", map[string]string{"sh.helm.release.v1.foo.v2": "5"},
			[]corev1.Secret{cachedRecord("sh.helm.release.v1.foo.v2", "4")}, false},
		{"cache lacks a created record", map[string]string{"sh.helm.release.v1.foo.v2": "5"},
			[]corev1.Secret{cachedRecord("sh.helm.release.v1.foo.v1", "3")}, false},
		{"cache still has a deleted record", map[string]string{"sh.helm.release.v1.foo.v1": ""},
			[]corev1.Secret{cachedRecord("sh.helm.release.v1.foo.v1", "3")}, false},
		{"cache shows the deletion", map[string]string{"sh.helm.release.v1.foo.v1": ""}, nil, true},
		{"a write to another release", map[string]string{"sh.helm.release.v1.foobar.v1": "9"}, nil, true},
		{"a write to a release whose name starts with this one's and .v", map[string]string{"sh.helm.release.v1.foo.vbar.v1": "9"}, nil, true},
		{"one write shown, one not", map[string]string{"sh.helm.release.v1.foo.v1": "7", "sh.helm.release.v1.foo.v2": "8"},
			[]corev1.Secret{cachedRecord("sh.helm.release.v1.foo.v1", "7")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewReleaseStore(nil, nil, nil)
			for name, rv := range tc.written {
				s.wrote("ns", name, rv)
			}
			if got := s.caughtUp("ns", "foo", tc.cached); got != tc.want {
				t.Errorf("caughtUp = %v, want %v", got, tc.want)
			}
			left := s.written[types.NamespacedName{Namespace: "ns", Name: "foo"}]
			if tc.want && len(left) != 0 {
				t.Errorf("writes the cache shows are forgotten, left %v", left)
			}
			if !tc.want && len(left) == 0 {
				t.Errorf("writes the cache does not show yet are kept, left none")
			}
			for record := range tc.written {
				if release := releaseOf(record); release != "foo" && len(s.written[types.NamespacedName{Namespace: "ns", Name: release}]) == 0 {
					t.Errorf("a read of release foo forgot the write of %s", record)
				}
			}
		})
	}
}

// recordSecret is a release record Secret as Helm's Secrets driver writes it.
func recordSecret(t *testing.T, rel *release.Release, uid types.UID) corev1.Secret {
	t.Helper()
	raw, err := json.Marshal(rel)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write(raw)
	_ = w.Close()
	sec := cachedRecord(fmt.Sprintf("sh.helm.release.v1.%s.v%d", rel.Name, rel.Version), "3")
	sec.UID = uid
	sec.Data = map[string][]byte{"release": []byte(base64.StdEncoding.EncodeToString(gz.Bytes()))}
	sec.Labels = map[string]string{"owner": "helm", "status": "deployed"}
	sec.OwnerReferences = []metav1.OwnerReference{{Kind: "Memcached", Name: rel.Name, UID: unitOwner, Controller: ptr.To(true)}}
	unitSeal.sign(&sec, unitOwner)
	return sec
}

// unitSeal seals the records of the unit tests, as controlled by the CR of UID unitOwner;
// unitRecords checks them with it.
var unitSeal = &Seal{keys: map[string][]byte{"key-1": bytes.Repeat([]byte("u"), 32)}, current: "key-1", refused: map[types.UID]string{}}

const unitOwner types.UID = "cr-unit"

func unitRecords() *Records {
	r := NewRecords()
	r.UseSeal(unitSeal)
	return r
}

// Releases of the same chart share one decoded copy of it; another chart is its own.
func TestDecodeSharesCharts(t *testing.T) {
	chartOf := func(version string) *chart.Chart {
		return &chart.Chart{Metadata: &chart.Metadata{Name: "memcached", Version: version},
			Templates: []*chart.File{{Name: "templates/deployment.yaml", Data: []byte("kind: Deployment")}}}
	}
	s := unitRecords()
	var decoded []*release.Release
	for i, c := range []*chart.Chart{chartOf("0.1.0"), chartOf("0.1.0"), chartOf("0.2.0")} {
		sec := recordSecret(t, &release.Release{Name: fmt.Sprintf("r%d", i), Version: 1, Chart: c}, types.UID(fmt.Sprint(i)))
		rel, err := s.decode(&sec)
		if err != nil {
			t.Fatal(err)
		}
		decoded = append(decoded, rel)
	}
	if decoded[0].Chart != decoded[1].Chart {
		t.Error("two releases of one chart hold two copies of it")
	}
	if decoded[2].Chart == decoded[0].Chart || decoded[2].Chart.Metadata.Version != "0.2.0" {
		t.Errorf("a release of another chart got %+v", decoded[2].Chart.Metadata)
	}
}

// Each caller gets its own Release and Info: Helm changes a release's status in place.
func TestDecodeReturnsCopies(t *testing.T) {
	sec := recordSecret(t, &release.Release{Name: "foo", Version: 1, Info: &release.Info{Status: release.StatusDeployed}}, "uid")
	s := unitRecords()
	a, err := s.decode(&sec)
	if err != nil {
		t.Fatal(err)
	}
	a.Info.Status = release.StatusSuperseded
	a.Labels["status"] = "superseded"
	b, err := s.decode(&sec)
	if err != nil {
		t.Fatal(err)
	}
	if b.Info.Status != release.StatusDeployed || b.Labels["status"] != "deployed" || b.Name != "foo" {
		t.Errorf("a caller's change reached the memo: %+v %v", b.Info, b.Labels)
	}
}

// A first install's record is written once, when Helm records the install's outcome; the name is
// claimed before, by a read: a record of that name that someone else made refuses the install
// before any object is touched, and one made meanwhile refuses the record, which Install reports.
func TestFirstInstallIsRecordedOnce(t *testing.T) {
	pending := func() *release.Release {
		return &release.Release{Name: "m", Namespace: "ns", Version: 1, Info: &release.Info{Status: release.StatusPendingInstall}}
	}
	key := "sh.helm.release.v1.m.v1"
	newDriver := func(objs ...runtime.Object) (*storeDriver, *fake.Clientset) {
		cs := fake.NewClientset(objs...)
		owner := metav1.OwnerReference{APIVersion: "cache.my.domain/v1", Kind: "Memcached", Name: "m", UID: unitOwner, Controller: ptr.To(true)}
		secrets := recordingSecrets{SecretInterface: cs.CoreV1().Secrets("ns"), seal: unitSeal, namespace: "ns", owner: owner}
		return &storeDriver{Secrets: driver.NewSecrets(secrets), namespace: "ns", owner: unitOwner, anyones: cs.CoreV1().Secrets("ns")}, cs
	}
	writes := func(cs *fake.Clientset) []string {
		var out []string
		for _, a := range cs.Actions() {
			if a.GetVerb() != "get" {
				out = append(out, a.GetVerb())
			}
		}
		return out
	}

	t.Run("written once, as the install ended", func(t *testing.T) {
		d, cs := newDriver()
		rel := pending()
		if err := d.Create(key, rel); err != nil {
			t.Fatal(err)
		}
		if w := writes(cs); len(w) != 0 {
			t.Fatalf("the pending record is written: %v", w)
		}
		rel.SetStatus(release.StatusDeployed, "Install complete")
		if err := d.Update(key, rel); err != nil {
			t.Fatal(err)
		}
		if w := writes(cs); !slices.Equal(w, []string{"create"}) {
			t.Fatalf("writes %v, want one create", w)
		}
		sec, err := cs.CoreV1().Secrets("ns").Get(context.Background(), key, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sec.Labels["status"] != "deployed" || sec.Labels[oplabels.Record] != oplabels.Operator {
			t.Errorf("labels %v: want the deployed record, marked as the operator's", sec.Labels)
		}
		if err := unrecorded(d); err != nil {
			t.Errorf("unrecorded: %v", err)
		}
		rel.SetStatus(release.StatusSuperseded, "")
		if err := d.Update(key, rel); err != nil {
			t.Fatal(err)
		}
		if w := writes(cs); !slices.Equal(w, []string{"create", "update"}) {
			t.Errorf("writes %v: a later update updates", w)
		}
	})

	t.Run("someone else's record of that name refuses the install", func(t *testing.T) {
		theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key, Namespace: "ns", Labels: map[string]string{"owner": "helm", "name": "m"}}}
		d, cs := newDriver(theirs)
		if err := d.Create(key, pending()); !errors.Is(err, driver.ErrReleaseExists) {
			t.Fatalf("Create: %v, want %v", err, driver.ErrReleaseExists)
		}
		if w := writes(cs); len(w) != 0 {
			t.Errorf("writes %v", w)
		}
	})

	t.Run("the read started as the install starts is the one Create waits for", func(t *testing.T) {
		gets := func(cs *fake.Clientset) int { return len(cs.Actions()) - len(writes(cs)) }
		theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key, Namespace: "ns", Labels: map[string]string{"owner": "helm", "name": "m"}}}
		d, cs := newDriver(theirs)
		if recordKey("m", 1) != key {
			t.Fatalf("recordKey: %s, want Helm's key %s", recordKey("m", 1), key)
		}
		d.checkFree(recordKey("m", 1))
		if err := d.Create(key, pending()); !errors.Is(err, driver.ErrReleaseExists) {
			t.Fatalf("Create: %v, want %v", err, driver.ErrReleaseExists)
		}
		if n := gets(cs); n != 1 || len(writes(cs)) != 0 {
			t.Errorf("%d reads, writes %v: want the one read started ahead, no write", n, writes(cs))
		}

		d, cs = newDriver()
		d.checkFree(recordKey("another", 1))
		other := d.free
		if err := d.Create(key, pending()); err != nil || d.unwritten != key {
			t.Fatalf("Create: %v, held %q: want the name free and held", err, d.unwritten)
		}
		<-other.done
		if n := gets(cs); n != 2 {
			t.Errorf("%d reads: a read of another name does not answer for this one", n)
		}
	})

	t.Run("a failed install is recorded failed, once", func(t *testing.T) {
		d, cs := newDriver()
		rel := pending()
		if err := d.Create(key, rel); err != nil {
			t.Fatal(err)
		}
		rel.SetStatus(release.StatusFailed, "Release \"m\" failed")
		if err := d.Update(key, rel); err != nil {
			t.Fatal(err)
		}
		sec, err := cs.CoreV1().Secrets("ns").Get(context.Background(), key, metav1.GetOptions{})
		if err != nil || sec.Labels["status"] != "failed" || !slices.Equal(writes(cs), []string{"create"}) {
			t.Errorf("record %v (%v), writes %v: want one create of the failed record", sec.GetLabels(), err, writes(cs))
		}
	})

	t.Run("a name that cannot be checked is not claimed", func(t *testing.T) {
		d, cs := newDriver()
		cs.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewServiceUnavailable("etcd is down")
		})
		if err := d.Create(key, pending()); err == nil || errors.Is(err, driver.ErrReleaseExists) || !strings.Contains(err.Error(), "etcd is down") {
			t.Fatalf("Create: %v, want the read's error", err)
		}
		if d.unwritten != "" {
			t.Errorf("held %q", d.unwritten)
		}
	})

	t.Run("a record made meanwhile refuses the record, Install says so, and no later write touches that name", func(t *testing.T) {
		d, cs := newDriver()
		rel := pending()
		if err := d.Create(key, rel); err != nil {
			t.Fatal(err)
		}
		theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key, Namespace: "ns", ResourceVersion: "7"}}
		if _, err := cs.CoreV1().Secrets("ns").Create(context.Background(), theirs, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Helm records a release before each hook it runs, then at the end.
		for _, status := range []release.Status{release.StatusPendingInstall, release.StatusDeployed} {
			rel.SetStatus(status, "")
			if err := d.Update(key, rel); !errors.Is(err, driver.ErrReleaseExists) {
				t.Fatalf("Update (%s): %v, want %v", status, err, driver.ErrReleaseExists)
			}
		}
		if err := unrecorded(d); !errors.Is(err, driver.ErrReleaseExists) {
			t.Errorf("unrecorded: %v, want %v", err, driver.ErrReleaseExists)
		}
		if w := writes(cs); !slices.Equal(w, []string{"create", "create"}) {
			t.Errorf("writes %v: theirs, then the one refused create", w)
		}
		live, err := cs.CoreV1().Secrets("ns").Get(context.Background(), key, metav1.GetOptions{})
		if err != nil || live.Labels[oplabels.Record] != "" {
			t.Errorf("their Secret was written to: %v (%v)", live.GetLabels(), err)
		}
	})

	t.Run("an upgrade's pending record is written at once", func(t *testing.T) {
		d, cs := newDriver()
		rel := pending()
		rel.Version = 2
		rel.Info.Status = release.StatusPendingUpgrade
		if err := d.Create("sh.helm.release.v1.m.v2", rel); err != nil {
			t.Fatal(err)
		}
		if w := writes(cs); !slices.Equal(w, []string{"create"}) {
			t.Errorf("writes %v, want one create", w)
		}
	})
}
