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

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/example/memcached-operator/internal/helm/library"
)

// UninstallFinalizer holds a CR until the operator has uninstalled its release. It is the
// library's finalizer (library.Finalizer) qualified with the API's domain, as the API server asks
// of every finalizer (it warns whenever an unqualified one is added). Releases before 1.3.0 stored
// the library's name; a CR that still carries it is held and uninstalled the same way until the
// Go side moves it to this one (MovedFinalizers).
const UninstallFinalizer = "cache.my.domain/uninstall-helm-release"

// HasUninstallFinalizer says whether a CR carries the uninstall finalizer under either name.
func HasUninstallFinalizer(obj client.Object) bool {
	return controllerutil.ContainsFinalizer(obj, UninstallFinalizer) || controllerutil.ContainsFinalizer(obj, library.Finalizer)
}

// MovedFinalizers is a CR's finalizers with the library's name replaced by UninstallFinalizer,
// and whether anything changed.
func MovedFinalizers(finalizers []string) ([]string, bool) {
	return renamed(finalizers, library.Finalizer, UninstallFinalizer)
}

// renamed is finalizers with from replaced by to (once, where from stood first), and whether
// from was there.
func renamed(finalizers []string, from, to string) ([]string, bool) {
	if !slices.Contains(finalizers, from) {
		return finalizers, false
	}
	out := make([]string, 0, len(finalizers))
	for _, f := range finalizers {
		if f == from {
			f = to
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, true
}

// finalizerClient is the library's client with the finalizer translated: the library adds,
// looks for and removes its own name (it has no option for another), the API server stores
// UninstallFinalizer. Reads show the library its name; writes store the qualified one; the object
// a write returns is shown to the library as a read is, because the library goes on with it
// (after its status write it removes the finalizer from the object that write returned).
type finalizerClient struct {
	client.Client
}

func (c finalizerClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Client.Get(ctx, key, obj, opts...)
	toLibrary(obj)
	return err
}

func (c finalizerClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	toStored(obj)
	defer toLibrary(obj)
	return c.Client.Update(ctx, obj, opts...)
}

func (c finalizerClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	toStored(obj)
	defer toLibrary(obj)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c finalizerClient) Status() client.SubResourceWriter {
	return finalizerStatusWriter{c.Client.Status()}
}

// finalizerStatusWriter writes status as the inner writer does (the API server keeps metadata as
// it is on a status write) and shows the library its finalizer in the object returned.
type finalizerStatusWriter struct {
	client.SubResourceWriter
}

func (w finalizerStatusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	defer toLibrary(obj)
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

func (w finalizerStatusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	defer toLibrary(obj)
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

// toLibrary shows the library its own name for the uninstall finalizer.
func toLibrary(obj client.Object) {
	if shown, changed := renamed(obj.GetFinalizers(), UninstallFinalizer, library.Finalizer); changed {
		obj.SetFinalizers(shown)
	}
}

// toStored stores the library's finalizer under its qualified name. On a CR being deleted the
// library's only write removes its finalizer, and the API server refuses any finalizer the CR did
// not have: there the list goes as the library left it.
func toStored(obj client.Object) {
	if obj.GetDeletionTimestamp() != nil {
		return
	}
	if moved, changed := MovedFinalizers(obj.GetFinalizers()); changed {
		obj.SetFinalizers(moved)
	}
}
