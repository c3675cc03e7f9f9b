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

package controllers

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/helm"
	"github.com/example/memcached-operator/internal/helm/library"
	"github.com/example/memcached-operator/internal/labels"
)

// CacheOptions limits the manager's cache to the watched namespaces (empty: all),
// its Pod cache to memcached pods (of the chart and of MemcachedBackups) and its Secret cache to
// Helm release records: the controllers read only those, and caching every Pod and Secret of the
// cluster would cost memory. The records are kept as metadata, their decoded form in records
// (nil: with their data); Config.Records must be the same. Objects of other kinds that are not
// the operator's are kept as a skeleton (skeletonOfOthers).
func CacheOptions(watchNamespaces []string, records *helm.Records) cache.Options {
	opts := cache.Options{
		DefaultTransform: skeletonOfOthers,
		ByObject:         partlyCached(),
	}
	for obj, by := range opts.ByObject {
		// The cache holds only the operator's objects of these kinds (by label).
		by.Transform = cache.TransformStripManagedFields()
		if _, secrets := obj.(*corev1.Secret); secrets && records != nil {
			by.Transform = records.CacheTransform(by.Transform)
		}
		opts.ByObject[obj] = by
	}
	for _, ns := range watchNamespaces {
		if opts.DefaultNamespaces == nil {
			opts.DefaultNamespaces = map[string]cache.Config{}
		}
		opts.DefaultNamespaces[ns] = cache.Config{}
	}
	return opts
}

// PartlyCachedKinds are the kinds CacheOptions caches only some objects of.
func PartlyCachedKinds() []client.Object {
	return slices.Collect(maps.Keys(partlyCached()))
}

func partlyCached() map[client.Object]cache.ByObject {
	memcachedPods, err := k8slabels.NewRequirement(labels.Name, selection.In, []string{BackupAppName, labels.ChartName})
	if err != nil {
		panic(err) // constant arguments
	}
	return map[client.Object]cache.ByObject{
		&corev1.Pod{}: {Label: k8slabels.NewSelector().Add(*memcachedPods)},
		// The Helm reconcilers watch the release records this operator wrote; no other Secret,
		// and no Helm release of others, is needed.
		&corev1.Secret{}: {Label: helm.RecordSelector()},
	}
}

// skeletonOfOthers is the cache's transform of every object: nothing reads managedFields, a good
// part of each object; and an object of a kind the chart renders (Deployments, Services, ...)
// that is neither the chart's nor a MemcachedBackup's is kept as its identity and labels alone.
// The namespaces a tenant shares with the operator hold many more Deployments and Services of
// others than of the operator's, which the operator only needs to know exist: Helm's existence
// checks are answered from the cache (a present object is read from the API server before Helm
// touches it), and the watches filter by labels. So the operator's memory does not grow with
// others' objects.
func skeletonOfOthers(obj any) (any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return obj, nil
	}
	o.SetManagedFields(nil)
	if operators(o) {
		return o, nil
	}
	var skeleton client.Object
	if u, ok := o.(*unstructured.Unstructured); ok {
		s := &unstructured.Unstructured{}
		s.SetGroupVersionKind(u.GroupVersionKind())
		skeleton = s
	} else if skeleton, ok = reflect.New(reflect.TypeOf(o).Elem()).Interface().(client.Object); !ok {
		return o, nil
	}
	skeleton.SetName(o.GetName())
	skeleton.SetNamespace(o.GetNamespace())
	skeleton.SetUID(o.GetUID())
	skeleton.SetResourceVersion(o.GetResourceVersion())
	skeleton.SetGeneration(o.GetGeneration())
	skeleton.SetLabels(o.GetLabels())
	skeleton.SetOwnerReferences(o.GetOwnerReferences())
	skeleton.SetCreationTimestamp(o.GetCreationTimestamp())
	skeleton.SetDeletionTimestamp(o.GetDeletionTimestamp())
	// Which Helm release made it, for the messages that say whose an object in the way is.
	if a := o.GetAnnotations(); a[library.ReleaseNameAnnotation] != "" {
		skeleton.SetAnnotations(map[string]string{library.ReleaseNameAnnotation: a[library.ReleaseNameAnnotation], library.ReleaseNamespaceAnnotation: a[library.ReleaseNamespaceAnnotation]})
	}
	return skeleton, nil
}

// operators reports whether the cache keeps an object whole: the operator's own kinds, and the
// objects of the chart (every version labels them with its name) and of MemcachedBackups.
func operators(o client.Object) bool {
	switch o.(type) {
	case *cachev1.Memcached, *cachev1.MemcachedBackup:
		return true
	}
	if u, ok := o.(*unstructured.Unstructured); ok && u.GroupVersionKind().Group == cachev1.GroupVersion.Group {
		return true
	}
	if ref := metav1.GetControllerOf(o); ref != nil && strings.HasPrefix(ref.APIVersion, cachev1.GroupVersion.Group+"/") {
		return true // a MemcachedBackup's Deployment, whatever someone did to its labels
	}
	l := o.GetLabels()
	return l[labels.Name] == labels.ChartName || l[labels.Name] == BackupAppName || l[labels.PartOf] == labels.Operator
}
