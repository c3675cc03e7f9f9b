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

package helm

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/helm/library"
)

// The library sees and handles its own finalizer name, whichever of the two names the CR stores,
// as its reconciler does: add it to a new CR, remove it from one being deleted after a status write.
func TestFinalizerClient(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := cachev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	cases := []struct {
		name     string
		stored   []string
		deleting bool
		want     []string // stored after the library's write
	}{
		{"a new CR: the library adds its name, the qualified one is stored", nil, false, []string{UninstallFinalizer}},
		{"a CR with the qualified name, being deleted: the library removes it", []string{"example.com/keep", UninstallFinalizer}, true, []string{"example.com/keep"}},
		{"a CR of 1.1.0 deleted before the move: the library removes the old name", []string{library.Finalizer, "example.com/keep"}, true, []string{"example.com/keep"}},
		{"a CR with both names, being deleted: both go", []string{library.Finalizer, UninstallFinalizer}, true, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			mc := &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mc", Finalizers: tc.stored}}
			if tc.deleting {
				mc.DeletionTimestamp = &now
			}
			inner := fake.NewClientBuilder().WithScheme(scheme).WithObjects(mc).WithStatusSubresource(mc).Build()
			c := finalizerClient{inner}
			key := client.ObjectKeyFromObject(mc)

			seen := &cachev1.Memcached{}
			if err := c.Get(ctx, key, seen); err != nil {
				t.Fatal(err)
			}
			if slices.Contains(seen.Finalizers, UninstallFinalizer) {
				t.Fatalf("the library is shown %v: it knows only %q", seen.Finalizers, library.Finalizer)
			}
			// The library's updater: status first, then the finalizer, on the object the status
			// write returned.
			if err := c.Status().Update(ctx, seen); err != nil {
				t.Fatal(err)
			}
			if tc.deleting {
				if !controllerutil.ContainsFinalizer(seen, library.Finalizer) {
					t.Fatalf("after its status write the library sees %v: it would never remove its finalizer", seen.Finalizers)
				}
				controllerutil.RemoveFinalizer(seen, library.Finalizer)
			} else {
				controllerutil.AddFinalizer(seen, library.Finalizer)
			}
			if err := c.Update(ctx, seen); err != nil {
				t.Fatal(err)
			}
			stored := &cachev1.Memcached{}
			err := inner.Get(ctx, key, stored)
			switch {
			case tc.deleting && len(tc.want) == 0:
				if err == nil {
					t.Fatalf("the CR is still there with %v", stored.Finalizers)
				}
			case err != nil:
				t.Fatal(err)
			case !slices.Equal(stored.Finalizers, tc.want):
				t.Errorf("stored %v, want %v", stored.Finalizers, tc.want)
			}
		})
	}
}
