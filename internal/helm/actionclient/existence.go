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
	"net/http"
	"regexp"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// AbsentFromCache returns the rest config of Helm's kube client: a GET of one namespaced object
// that the manager's cache (synced for that kind; the first installs wait for it) does not hold
// is answered 404 from the cache, instead of by the API server. Before it creates a release's objects, Helm GETs each to
// refuse adopting one it did not make; for a new release those are all absent, five requests per
// install that the cache already answers. An object the cache holds is read from the API server,
// so Helm's ownership check sees it as it is. If the cache has not yet seen an object made a
// moment ago, Helm's create fails with AlreadyExists, and the next reconcile refuses it properly:
// nothing is adopted, and the failed install or upgrade drops its record, whose uninstall would
// delete that object (dropForeignConflict). partlyCached are the kinds the cache holds only some
// objects of (selected by label): their checks go to the API server. Upstream home: a lookup
// hook for Helm's existence checks.
//
// syncWait is how long the checks of a kind wait for its informer's first list (0:
// DefaultSyncWait).
func AbsentFromCache(c cache.Cache, mapper meta.RESTMapper, scheme *runtime.Scheme, syncWait time.Duration, partlyCached ...client.Object) (func(base *rest.Config) *rest.Config, error) {
	if syncWait <= 0 {
		syncWait = DefaultSyncWait
	}
	skip := map[schema.GroupVersionKind]bool{}
	for _, o := range partlyCached {
		gvk, err := apiutil.GVKForObject(o, scheme)
		if err != nil {
			return nil, err
		}
		skip[gvk] = true
	}
	waiting := &sync.Map{}
	return func(base *rest.Config) *rest.Config {
		cfg := rest.CopyConfig(base)
		cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
			return absentFromCache{next: next, cache: c, mapper: mapper, scheme: scheme, skip: skip, waiting: waiting, syncWait: syncWait}
		})
		return cfg
	}, nil
}

type absentFromCache struct {
	next     http.RoundTripper
	cache    cache.Cache
	mapper   meta.RESTMapper
	scheme   *runtime.Scheme // typed kinds are looked up typed: the informers the watches share
	skip     map[schema.GroupVersionKind]bool
	waiting  *sync.Map     // kind -> chan struct{}, closed when it synced or syncWait passed
	syncWait time.Duration // how long the checks of a kind wait for its informer's first list
}

// DefaultSyncWait is how long the existence checks of a kind wait for its informer's first list,
// unless the settings say otherwise.
const DefaultSyncWait = 5 * time.Second

// synced reports whether the cache has synced the kind, waiting for it once per kind.
func (t absentFromCache) synced(ctx context.Context, gvk schema.GroupVersionKind, inf cache.Informer) bool {
	if inf.HasSynced() {
		return true
	}
	done := make(chan struct{})
	if first, loaded := t.waiting.LoadOrStore(gvk, done); loaded {
		done = first.(chan struct{})
	} else {
		go func() {
			defer close(done)
			_ = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, t.syncWait, true,
				func(context.Context) (bool, error) { return inf.HasSynced(), nil })
		}()
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
	return inf.HasSynced()
}

// objectPath is the path of one namespaced object: /api/v1/... or /apis/GROUP/VERSION/..., then
// namespaces/NS/RESOURCE/NAME, no subresource.
var objectPath = regexp.MustCompile(`^/(?:api/(v1)|apis/([^/]+)/([^/]+))/namespaces/([^/]+)/([^/]+)/([^/]+)$`)

func (t absentFromCache) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.URL.RawQuery != "" {
		return t.next.RoundTrip(req)
	}
	m := objectPath.FindStringSubmatch(req.URL.Path)
	if m == nil {
		return t.next.RoundTrip(req)
	}
	gvr := schema.GroupVersionResource{Group: m[2], Version: m[1] + m[3], Resource: m[5]}
	gvk, err := t.mapper.KindFor(gvr)
	if err != nil || t.skip[gvk] {
		return t.next.RoundTrip(req)
	}
	obj := NewObject(t.scheme, gvk)
	// Only a kind the cache has synced. Asking starts the kind's informer, as the release's
	// dependent watch would a moment later; the first installs wait for its first list (one
	// LIST instead of a GET per install), at most syncWait, once per kind.
	inf, err := t.cache.GetInformer(req.Context(), obj, cache.BlockUntilSynced(false))
	if err != nil || !t.synced(req.Context(), gvk, inf) {
		return t.next.RoundTrip(req)
	}
	err = t.cache.Get(req.Context(), client.ObjectKey{Namespace: m[4], Name: m[6]}, obj)
	if !apierrors.IsNotFound(err) {
		return t.next.RoundTrip(req)
	}
	return statusResponse(req, apierrors.NewNotFound(gvr.GroupResource(), m[6]).ErrStatus, http.StatusNotFound), nil
}
