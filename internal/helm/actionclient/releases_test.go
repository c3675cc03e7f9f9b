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
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewReleaseStore(nil, nil, nil)
			for name, rv := range tc.written {
				s.wrote("ns", name, rv)
			}
			if got := s.caughtUp("ns", "foo", tc.cached); got != tc.want {
				t.Errorf("caughtUp = %v, want %v", got, tc.want)
			}
			if tc.want && tc.name != "a write to another release" && len(s.written) != 0 {
				t.Errorf("writes the cache shows are forgotten, left %v", s.written)
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
