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
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cacheOf is a cache that holds the named Services, and says whether it has synced.
type cacheOf struct {
	*informertest.FakeInformers
	services map[string]bool
	synced   func() bool
}

func (c cacheOf) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	inf, err := c.FakeInformers.GetInformer(ctx, obj, opts...)
	return syncedInformer{Informer: inf, synced: c.synced}, err
}

type syncedInformer struct {
	cache.Informer
	synced func() bool
}

func (s syncedInformer) HasSynced() bool { return s.synced() }

func (c cacheOf) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	if c.services[key.Namespace+"/"+key.Name] {
		return nil
	}
	if key.Namespace == "unwatched" { // as a cache limited to some namespaces answers
		return errors.New("unable to get: unwatched/" + key.Name + " because of unknown namespace for the cache")
	}
	return apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, key.Name)
}

// Helm's existence check of an object the synced cache does not hold is answered 404 there;
// every other request reaches the API server.
func TestAbsentFromCache(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Service"), meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)
	cases := []struct {
		name, method, path string
		synced             bool
		wantServer         bool
		syncsLater         bool // the cache syncs while the check waits
	}{
		{"absent from a synced cache", http.MethodGet, "/api/v1/namespaces/ns/services/new", true, false, false},
		{"in the cache: Helm's ownership check reads it live", http.MethodGet, "/api/v1/namespaces/ns/services/theirs", true, true, false},
		{"a cache that does not sync in time", http.MethodGet, "/api/v1/namespaces/ns/services/new", false, true, false},
		{"a cache that syncs while the check waits", http.MethodGet, "/api/v1/namespaces/ns/services/new", false, false, true},
		{"a write", http.MethodPut, "/api/v1/namespaces/ns/services/new", true, true, false},
		{"a subresource", http.MethodGet, "/api/v1/namespaces/ns/services/new/status", true, true, false},
		{"a list", http.MethodGet, "/api/v1/namespaces/ns/services", true, true, false},
		{"a kind the mapper does not know", http.MethodGet, "/apis/example.com/v1/namespaces/ns/widgets/new", true, true, false},
		{"a kind the cache holds only in part (Secrets by label)", http.MethodGet, "/api/v1/namespaces/ns/secrets/new", true, true, false},
		{"a query", http.MethodGet, "/api/v1/namespaces/ns/services/new?resourceVersion=0", true, true, false},
		{"a cluster-scoped path", http.MethodGet, "/api/v1/namespaces/new", true, true, false},
		{"a namespace the cache does not watch", http.MethodGet, "/api/v1/namespaces/unwatched/services/new", true, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reached := false
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				reached = true
				w.WriteHeader(http.StatusTeapot)
			}))
			defer server.Close()
			start := time.Now()
			synced := func() bool { return tc.synced || (tc.syncsLater && time.Since(start) > 50*time.Millisecond) }
			c := cacheOf{FakeInformers: &informertest.FakeInformers{}, services: map[string]bool{"ns/theirs": true}, synced: synced}
			rt := absentFromCache{next: http.DefaultTransport, cache: c, mapper: mapper, scheme: clientgoscheme.Scheme,
				skip: map[schema.GroupVersionKind]bool{corev1.SchemeGroupVersion.WithKind("Secret"): true}, waiting: &sync.Map{},
				syncWait: 500 * time.Millisecond}
			req, _ := http.NewRequest(tc.method, server.URL+tc.path, nil)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			if reached != tc.wantServer {
				t.Fatalf("reached the API server: %v, want %v", reached, tc.wantServer)
			}
			if tc.wantServer {
				return
			}
			var status metav1.Status
			if err := json.NewDecoder(resp.Body).Decode(&status); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusNotFound || status.Reason != metav1.StatusReasonNotFound || status.Kind != "Status" || status.Details.Name != "new" {
				t.Errorf("answer %d %+v, want a 404 NotFound Status for services/new", resp.StatusCode, status)
			}
		})
	}
}
