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
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"

	"github.com/example/memcached-operator/internal/helm/library"
	oplabels "github.com/example/memcached-operator/internal/labels"
)

func testSeal(t *testing.T, keys ...string) *Seal {
	t.Helper()
	ring := &corev1.Secret{Data: map[string][]byte{}}
	for i, k := range keys {
		ring.Data[sealKeyPrefix+string(rune('1'+i))] = bytes.Repeat([]byte(k), 32)
	}
	s := &Seal{refused: map[types.UID]string{}}
	if err := s.setRing(ring); err != nil {
		t.Fatal(err)
	}
	return s
}

// sealedRecord is a record of release foo, revision 2, that the CR of UID owner controls, sealed
// with s.
func sealedRecord(t *testing.T, s *Seal, owner types.UID) *corev1.Secret {
	t.Helper()
	sec := recordSecret(t, &release.Release{Name: "foo", Version: 2, Manifest: "kind: Deployment"}, "uid-1")
	sec.Namespace = "tenant-a"
	sec.Type = "helm.sh/release.v1"
	sec.Labels = map[string]string{"owner": "helm", "name": "foo", "status": "deployed", "version": "2", oplabels.Record: oplabels.Operator}
	sec.OwnerReferences = []metav1.OwnerReference{{APIVersion: "cache.my.domain/v1", Kind: "Memcached", Name: "foo", UID: owner, Controller: ptr.To(true)}}
	s.sign(&sec, owner)
	return &sec
}

// A seal holds for the record as the operator wrote it, and for nothing changed in what it binds.
func TestSealBindsTheRecord(t *testing.T) {
	s := testSeal(t, "a")
	if err := s.admit(sealedRecord(t, s, "cr-1"), "cr-1"); err != nil {
		t.Fatalf("the operator's own record is refused: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*corev1.Secret)
		owner  types.UID // the CR reading it; "": cr-1
		why    string
	}{
		{"the manifest edited", func(s *corev1.Secret) {
			s.Data["release"] = append(bytes.Clone(s.Data["release"][:len(s.Data["release"])-4]), []byte("AAAA")...)
		}, "", "changed after the operator wrote it"},
		{"another status label (Helm picks the deployed record by it)", func(s *corev1.Secret) { s.Labels["status"] = "superseded" }, "", "changed"},
		{"another revision label", func(s *corev1.Secret) { s.Labels["version"] = "9" }, "", "changed"},
		{"renamed (copied to another revision's name)", func(s *corev1.Secret) { s.Name = "sh.helm.release.v1.foo.v9" }, "", "changed"},
		{"copied to another namespace", func(s *corev1.Secret) { s.Namespace = "tenant-b" }, "", "changed"},
		{"another type", func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }, "", "changed"},
		{"another controller named", func(s *corev1.Secret) { s.OwnerReferences[0].UID = "cr-2" }, "", "changed"},
		{"read for a new CR of the same name", func(*corev1.Secret) {}, "cr-2", "another resource of the same name"},
		{"no controller", func(s *corev1.Secret) { s.OwnerReferences = nil }, "", "no controller"},
		{"no seal", func(s *corev1.Secret) { delete(s.Annotations, oplabels.RecordSeal) }, "", "carries no seal"},
		{"a seal of an unknown key", func(s *corev1.Secret) {
			s.Annotations[oplabels.RecordSeal] = strings.Replace(s.Annotations[oplabels.RecordSeal], "key-1", "key-7", 1)
		}, "", "key-7, which the operator does not hold"},
		{"a seal of another format", func(s *corev1.Secret) { s.Annotations[oplabels.RecordSeal] = "v0:key-1:AAAA" }, "", "not one this operator writes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sec := sealedRecord(t, s, "cr-1")
			tc.change(sec)
			owner := tc.owner
			if owner == "" {
				owner = "cr-1"
			}
			err := s.admit(sec, owner)
			var refused *RecordRefusedError
			if !errors.As(err, &refused) || !strings.Contains(refused.Why, tc.why) {
				t.Fatalf("admit = %v, want a refusal saying %q", err, tc.why)
			}
			if !strings.Contains(err.Error(), "kubectl -n "+sec.Namespace+" delete secret "+sec.Name) || !strings.HasPrefix(err.Error(), ReasonRecordRefused+": ") {
				t.Errorf("the refusal does not say its reason first and the way out: %v", err)
			}
		})
	}
	other := testSeal(t, "b")
	if err := other.admit(sealedRecord(t, s, "cr-1"), "cr-1"); err == nil {
		t.Error("a record sealed with another key (another operator's) verifies")
	}
}

// The newest key seals; every key of the ring verifies, so records sealed before a new key came
// keep working until they are sealed again.
func TestSealRingRotates(t *testing.T) {
	old := testSeal(t, "a")
	before := sealedRecord(t, old, "cr-1")
	ring := testSeal(t, "a", "b")
	if got := strings.Split(sealedRecord(t, ring, "cr-1").Annotations[oplabels.RecordSeal], ":")[1]; got != "key-2" {
		t.Errorf("sealed with %s, want the newest key, key-2", got)
	}
	if err := ring.admit(before, "cr-1"); err != nil {
		t.Errorf("a record sealed with the older key is refused: %v", err)
	}
	unknown := before.DeepCopy()
	unknown.Annotations[oplabels.RecordSeal] = strings.Replace(unknown.Annotations[oplabels.RecordSeal], "key-1", "key-7", 1)
	if id, known := ring.keyOf(before); !known || id != "key-1" {
		t.Errorf("keyOf = %s, %v: want key-1, which the ring holds", id, known)
	}
	if _, known := ring.keyOf(unknown); known {
		t.Error("keyOf takes a key the ring does not hold")
	}
	for name, data := range map[string]map[string][]byte{
		"a short key": {"key-1": []byte("short")},
		"a key name":  {"primary": bytes.Repeat([]byte("a"), 32)},
		"no key":      {},
	} {
		if err := (&Seal{}).setRing(&corev1.Secret{Data: data}); err == nil {
			t.Errorf("a ring with %s is taken", name)
		}
	}
}

// The fence lets through the kinds the chart's templates render, and no other.
func TestChartKinds(t *testing.T) {
	chrt := memcachedChart(t)
	kinds, err := ChartKinds(chrt)
	if err != nil {
		t.Fatal(err)
	}
	want := []schema.GroupKind{{Kind: "Service"}, {Kind: "ServiceAccount"}, {Kind: "ConfigMap"}, {Group: "apps", Kind: "StatefulSet"},
		{Group: "policy", Kind: "PodDisruptionBudget"}, {Group: "networking.k8s.io", Kind: "NetworkPolicy"},
		{Group: "monitoring.coreos.com", Kind: "ServiceMonitor"}, {Group: "monitoring.coreos.com", Kind: "PrometheusRule"}}
	less := func(a, b schema.GroupKind) int { return strings.Compare(a.String(), b.String()) }
	slices.SortFunc(kinds, less)
	slices.SortFunc(want, less)
	if !slices.Equal(kinds, want) {
		t.Errorf("chart kinds = %v, want %v", kinds, want)
	}

	chrt.Templates = append(chrt.Templates, &chart.File{Name: "templates/evil.yaml", Data: []byte("apiVersion: v1\nkind: {{ .Values.kind }}\n")})
	if _, err := ChartKinds(chrt); err == nil || !strings.Contains(err.Error(), "must be literal") {
		t.Errorf("a templated kind is taken: %v", err)
	}
}

// An object is the release's when it carries a mark of the release (its Helm annotations, the CR
// as controller) and no mark of anyone else.
func TestReleaseOwns(t *testing.T) {
	cr := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "mc", Namespace: "tenant-a", UID: "cr-1"}}
	cr.SetGroupVersionKind(schema.GroupVersionKind{Group: "cache.my.domain", Version: "v1", Kind: "Memcached"})
	annotations := map[string]string{library.ReleaseNameAnnotation: "mc", library.ReleaseNamespaceAnnotation: "tenant-a"}
	controller := []metav1.OwnerReference{{Kind: "Memcached", Name: "mc", UID: "cr-1", Controller: ptr.To(true)}}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		owners      []metav1.OwnerReference
		why         string
	}{
		{"the release's", annotations, controller, ""},
		{"made by Helm, its owner reference removed", annotations, nil, ""},
		{"made by the library's drift repair (no Helm annotations)", nil, controller, ""},
		{"the tenant's own", nil, nil, "neither the Helm annotations of release tenant-a/mc nor a controller reference"},
		{"an owner that is not the controller", nil, []metav1.OwnerReference{{Kind: "Memcached", Name: "mc", UID: "cr-1"}}, "neither"},
		{"another release's annotations", map[string]string{library.ReleaseNameAnnotation: "other", library.ReleaseNamespaceAnnotation: "tenant-a"}, controller, "of release tenant-a/other"},
		{"this name in another namespace", map[string]string{library.ReleaseNameAnnotation: "mc", library.ReleaseNamespaceAnnotation: "tenant-b"}, nil, "of release tenant-b/mc"},
		{"an earlier CR of the same name", annotations, []metav1.OwnerReference{{Kind: "Memcached", Name: "mc", UID: "cr-0", Controller: ptr.To(true)}}, "uid cr-0"},
		{"a MemcachedBackup's", nil, []metav1.OwnerReference{{Kind: "MemcachedBackup", Name: "mc", UID: "b-1", Controller: ptr.To(true)}}, "MemcachedBackup mc"},
	} {
		obj := &metav1.ObjectMeta{Annotations: tc.annotations, OwnerReferences: tc.owners}
		err := releaseOwns(obj, cr)
		if (tc.why == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.why)) {
			t.Errorf("%s: releaseOwns = %v, want %q", tc.name, err, tc.why)
		}
	}
}

// requestPath reads what the fence needs from the paths Helm's clients send.
func TestRequestPath(t *testing.T) {
	for path, want := range map[string][]string{
		"/api/v1/namespaces/tenant-b/services":                        {"v1", "", "", "tenant-b", "services", "", ""},
		"/apis/apps/v1/namespaces/tenant-b/deployments/victim":        {"", "apps", "v1", "tenant-b", "deployments", "victim", ""},
		"/apis/apps/v1/namespaces/tenant-b/deployments/victim/scale":  {"", "apps", "v1", "tenant-b", "deployments", "victim", "scale"},
		"/api/v1/namespaces/kube-system":                              {"v1", "", "", "", "namespaces", "kube-system", ""},
		"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/evil": {"", "rbac.authorization.k8s.io", "v1", "", "clusterrolebindings", "evil", ""},
	} {
		m := requestPath.FindStringSubmatch(path)
		if m == nil || !slices.Equal(m[1:], want) {
			t.Errorf("%s: %q, want %q", path, m, want)
		}
	}
}

// The cache never unzips a record whose seal does not hold (a tenant's record may unzip to
// gigabytes): it is refused from its seal alone, and kept without its data.
func TestRecordsRefuseBeforeDecoding(t *testing.T) {
	s := testSeal(t, "a")
	r := NewRecords()
	transform := r.CacheTransform(nil)

	forged := sealedRecord(t, s, "cr-1")
	forged.UID = "forged"
	forged.Data["release"] = []byte("not base64, not gzip: decoding it would fail")
	out, err := transform(forged.DeepCopy())
	if err != nil || out.(*corev1.Secret).Data == nil {
		t.Fatalf("before the keys are loaded the cache keeps the record as it is: %v", err)
	}
	r.UseSeal(s)
	out, err = transform(forged.DeepCopy())
	cached := out.(*corev1.Secret)
	if err != nil || cached.Data != nil {
		t.Fatalf("a refused record is kept with its data (err %v)", err)
	}
	var refused *RecordRefusedError
	if err := r.admit(cached, "cr-1"); !errors.As(err, &refused) || !strings.Contains(refused.Why, "changed after") {
		t.Errorf("admit = %v, want the seal's refusal", err)
	}
	if _, err := r.decode(cached); !errors.As(err, &refused) {
		t.Errorf("decode of a refused record = %v, want its refusal (it was never unzipped)", err)
	}

	ours := sealedRecord(t, s, "cr-1")
	out, _ = transform(ours.DeepCopy())
	if err := r.admit(out.(*corev1.Secret), "cr-1"); err != nil {
		t.Fatalf("the operator's record is refused: %v", err)
	}
	// The ring loses key-1: what it sealed no longer verifies, from the cache either.
	if err := s.setRing(&corev1.Secret{Data: map[string][]byte{"key-2": bytes.Repeat([]byte("b"), 32)}}); err != nil {
		t.Fatal(err)
	}
	if err := r.admit(out.(*corev1.Secret), "cr-1"); !errors.As(err, &refused) || !strings.Contains(refused.Why, "no longer holds") {
		t.Errorf("admit after key-1 was removed = %v, want a refusal", err)
	}
}

// A record is unzipped to at most maxDecodedRecord.
func TestDecodeRecordIsBounded(t *testing.T) {
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	if _, err := w.Write(make([]byte, maxDecodedRecord+1)); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	if _, err := decodeRecord([]byte(base64.StdEncoding.EncodeToString(gz.Bytes()))); err == nil || !strings.Contains(err.Error(), "unzips to more than") {
		t.Errorf("decodeRecord of a bomb = %v", err)
	}
}

// The ring says since when the operator seals; a ring written again keeps that date.
func TestSealSince(t *testing.T) {
	created := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	ring := newRing("ns", SealRingName, map[string][]byte{"key-1": bytes.Repeat([]byte("a"), 32)}, created.Add(-24*time.Hour))
	ring.CreationTimestamp = metav1.NewTime(created)
	s := &Seal{}
	if err := s.setRing(ring); err != nil {
		t.Fatal(err)
	}
	if !s.Since().Equal(created.Add(-24 * time.Hour)) {
		t.Errorf("since = %s, want the ring's annotation, a day before its creation", s.Since())
	}
	delete(ring.Annotations, oplabels.SealingSince)
	if err := s.setRing(ring); err != nil || !s.Since().Equal(created) {
		t.Errorf("since = %s (%v), want the ring's creation when it has no annotation", s.Since(), err)
	}
}

// The fence reads the requests of an API server served under a path (behind a proxy).
func TestFenceUnderAPathPrefix(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Service"), meta.RESTScopeNamespace)
	f := &Fence{kinds: map[schema.GroupKind]bool{{Kind: "Service"}: true}, mapper: mapper, recorder: events.NewFakeRecorder(10)}
	cr := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "mc", Namespace: "tenant-a", UID: "cr-1"}}
	cr.SetGroupVersionKind(schema.GroupVersionKind{Group: "cache.my.domain", Version: "v1", Kind: "Memcached"})
	sent := 0
	cfg := f.Wrap(cr, &rest.Config{Host: "https://proxy.example.com/k8s/clusters/c1"})
	rt := cfg.WrapTransport(roundTripper(func(*http.Request) (*http.Response, error) {
		sent++
		return &http.Response{StatusCode: http.StatusCreated, Body: io.NopCloser(strings.NewReader("{}"))}, nil
	}))
	for ns, want := range map[string]int{"tenant-a": http.StatusCreated, "tenant-b": http.StatusForbidden} {
		req, _ := http.NewRequest(http.MethodPost, "https://proxy.example.com/k8s/clusters/c1/api/v1/namespaces/"+ns+"/services", strings.NewReader(`{"metadata":{"name":"x"}}`))
		resp, err := rt.RoundTrip(req)
		if err != nil || resp.StatusCode != want {
			t.Errorf("create a Service in %s: %v %v, want %d", ns, resp.StatusCode, err, want)
		}
	}
	if sent != 1 {
		t.Errorf("%d requests sent, want the one in the release's namespace", sent)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The fence refuses every write to a subresource: Helm writes objects, never their status, scale,
// a ServiceAccount's token or a pod's eviction, though the kinds are the chart's.
func TestFenceRefusesSubresources(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Service"), meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ServiceAccount"), meta.RESTScopeNamespace)
	f := &Fence{kinds: map[schema.GroupKind]bool{{Kind: "Service"}: true, {Kind: "ServiceAccount"}: true}, mapper: mapper, recorder: events.NewFakeRecorder(10)}
	cr := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "mc", Namespace: "tenant-a", UID: "cr-1"}}
	cr.SetGroupVersionKind(schema.GroupVersionKind{Group: "cache.my.domain", Version: "v1", Kind: "Memcached"})
	sent := 0
	rt := f.Wrap(cr, &rest.Config{Host: "https://api.example.com"}).WrapTransport(roundTripper(func(*http.Request) (*http.Response, error) {
		sent++
		return &http.Response{StatusCode: http.StatusCreated, Body: io.NopCloser(strings.NewReader("{}"))}, nil
	}))
	for _, tc := range []struct{ method, path string }{
		{http.MethodPost, "/api/v1/namespaces/tenant-a/serviceaccounts/mc-memcached/token"},
		{http.MethodPatch, "/api/v1/namespaces/tenant-a/services/mc-memcached/status"},
		{http.MethodPut, "/api/v1/namespaces/tenant-a/services/mc-memcached/status"},
	} {
		req, _ := http.NewRequest(tc.method, "https://api.example.com"+tc.path, strings.NewReader(`{"metadata":{"name":"mc-memcached"}}`))
		resp, err := rt.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s: %v %v, want 403", tc.method, tc.path, resp.StatusCode, err)
		}
	}
	if sent != 0 {
		t.Errorf("%d requests sent, want none", sent)
	}
}
