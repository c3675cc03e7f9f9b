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
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reconcile repairs drift of the release's objects, and does nothing when there is none. An
// object someone else made in the place of one of the release's is left alone.
func (c *actionClient) Reconcile(rel *release.Release) error {
	inSync, err := InSync(context.Background(), c.cached, c.conf.KubeClient, types.NamespacedName{Namespace: rel.Namespace, Name: rel.Name}, rel.Manifest)
	if err != nil {
		return err
	}
	if inSync {
		return nil
	}
	if err := c.refuseForeign(rel.Manifest, rel.Name, rel.Namespace); err != nil {
		return err
	}
	return c.ActionInterface.Reconcile(rel)
}

// refuseForeign fails when an object of a manifest exists but Helm did not make it for this
// release (someone replaced it, or it was always someone else's): the operator would patch it,
// that is adopt it, and it never adopts what it did not make.
func (c *actionClient) refuseForeign(manifest, name, namespace string) error {
	objs, err := parsed(c.conf.KubeClient, types.NamespacedName{Namespace: namespace, Name: name}, manifest)
	if err != nil {
		return err
	}
	for _, o := range objs {
		key := o.key
		if key.Namespace == "" {
			key.Namespace = namespace
		}
		// Live, not from the cache: Helm decides on what it reads live the next moment.
		live := NewObject(c.client.Scheme(), o.gvk)
		if err := c.client.Get(context.Background(), key, live); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("read %s %s: %w", o.gvk.Kind, key.Name, err)
		}
		if !OwnedByRelease(live, c.owner) {
			return c.explainConflict(name, fmt.Errorf("%s %q in namespace %q exists and cannot be imported into the current release: Helm did not make it for release %s",
				o.gvk.Kind, key.Name, key.Namespace, name))
		}
	}
	return nil
}

// InSync reports whether every object of a manifest exists and already holds every field the
// manifest sets for it, reading the objects from c: typed where its scheme knows the kind, as
// the Helm controller watches them.
func InSync(ctx context.Context, c client.Client, kc kube.Interface, release types.NamespacedName, manifest string) (bool, error) {
	objs, err := parsed(kc, release, manifest)
	if err != nil {
		return false, err
	}
	for _, expected := range objs {
		existing := NewObject(c.Scheme(), expected.gvk)
		if err := c.Get(ctx, expected.key, existing); err != nil {
			return false, nil // missing, or unreadable: the library's reconcile handles and reports it
		}
		existing.GetObjectKind().SetGroupVersionKind(expected.gvk) // as in the manifest
		same, err := holds(existing, expected)
		if err != nil || !same {
			return false, err
		}
	}
	return true, nil
}

// NewObject is an empty object of a kind: typed when the scheme knows the kind, so a release's
// objects are read from and watched in the manager's typed caches (the Go side watches the
// Deployments too), which take a fraction of the memory of unstructured copies.
func NewObject(scheme *runtime.Scheme, gvk schema.GroupVersionKind) client.Object {
	if typed, err := scheme.New(gvk); err == nil {
		if obj, ok := typed.(client.Object); ok {
			return obj
		}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// expectedObject is an object of a release manifest, as the in-sync check needs it.
type expectedObject struct {
	gvk  schema.GroupVersionKind
	key  client.ObjectKey
	json []byte
	// patchType is a zero object of the kind's Go type, whose field tags say how the library
	// patches it (strategic merge), or nil for kinds patched with a JSON merge patch.
	patchType runtime.Object
}

// manifests memoizes the objects of each release's manifest, by release: a manifest changes only
// with an upgrade, and parsing it (YAML, REST mapping) was a good part of an idle reconcile. One
// entry per release, dropped by its uninstall: a pool of manifests bounded by count (4096 until
// 1.2.0) was parsed again on nearly every reconcile once there were more releases than that.
var manifests = struct {
	sync.Mutex
	byRelease map[types.NamespacedName]parsedManifest
}{byRelease: map[types.NamespacedName]parsedManifest{}}

type parsedManifest struct {
	manifest string // the decoded record's own string: held, not copied
	objs     []expectedObject
}

// forgetManifest drops the memo of an uninstalled release.
func forgetManifest(release types.NamespacedName) {
	manifests.Lock()
	delete(manifests.byRelease, release)
	manifests.Unlock()
}

func parsed(kc kube.Interface, release types.NamespacedName, manifest string) ([]expectedObject, error) {
	manifests.Lock()
	memo, ok := manifests.byRelease[release]
	manifests.Unlock()
	if ok && memo.manifest == manifest {
		return memo.objs, nil
	}
	var objs []expectedObject
	infos, err := kc.Build(bytes.NewBufferString(manifest), false)
	if err != nil {
		return nil, fmt.Errorf("build release objects: %w", err)
	}
	for _, info := range infos {
		raw, err := json.Marshal(info.Object)
		if err != nil {
			return nil, err
		}
		obj := expectedObject{gvk: info.Mapping.GroupVersionKind, key: client.ObjectKey{Namespace: info.Namespace, Name: info.Name}, json: raw}
		versioned := kube.AsVersioned(info)
		_, isUnstructured := versioned.(runtime.Unstructured)
		_, isCRD := versioned.(*apiextensionsv1.CustomResourceDefinition)
		if !isUnstructured && !isCRD {
			obj.patchType = zeroOf(reflect.TypeOf(versioned).Elem())
		}
		objs = append(objs, obj)
	}
	manifests.Lock()
	manifests.byRelease[release] = parsedManifest{manifest: manifest, objs: objs}
	manifests.Unlock()
	return objs, nil
}

// zeros holds one zero object per Go type, shared by every release's memo: the strategic merge
// patch only reads its type. One per object and release was 3.5 kB per release, 35 MB of the live
// heap with 10000 releases.
var zeros sync.Map // reflect.Type -> runtime.Object

func zeroOf(t reflect.Type) runtime.Object {
	if z, ok := zeros.Load(t); ok {
		return z.(runtime.Object)
	}
	z, _ := zeros.LoadOrStore(t, reflect.New(t).Interface().(runtime.Object))
	return z.(runtime.Object)
}

// holds reports whether applying expected to existing, with the patch semantics the library
// uses for its kind, leaves existing unchanged.
func holds(existing runtime.Object, expected expectedObject) (bool, error) {
	existingJSON, err := json.Marshal(existing)
	if err != nil {
		return false, err
	}
	var merged []byte
	if expected.patchType == nil {
		merged, err = jsonpatch.MergePatch(existingJSON, expected.json)
	} else {
		merged, err = strategicpatch.StrategicMergePatch(existingJSON, expected.json, expected.patchType)
	}
	if err != nil {
		return false, fmt.Errorf("merge %s %s: %w", expected.gvk.Kind, expected.key.Name, err)
	}
	var before, after any
	if err := json.Unmarshal(existingJSON, &before); err != nil {
		return false, err
	}
	if err := json.Unmarshal(merged, &after); err != nil {
		return false, err
	}
	return reflect.DeepEqual(before, after), nil
}
