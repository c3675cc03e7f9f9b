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

// Package managercache is the manager's cache: what it holds of each kind (the operator's own
// objects whole, others' as a skeleton, pods without most of their spec) and each Memcached held
// once, unstructured, for the Helm side and the Go side alike.
package managercache

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/helm"
	"github.com/example/memcached-operator/internal/helm/library"
	"github.com/example/memcached-operator/internal/labels"
	"github.com/example/memcached-operator/internal/rollout"
)

// Options limits the manager's cache to the watched namespaces (empty: all),
// its Pod cache to memcached pods (of the chart and of MemcachedBackups) and its Secret cache to
// Helm release records: the controllers read only those, and caching every Pod and Secret of the
// cluster would cost memory. The records are kept as metadata, their decoded form in records
// (nil: with their data); Config.Records must be the same. Objects of other kinds that are not
// the operator's are kept as a skeleton (skeletonOfOthers).
func Options(watchNamespaces []string, records *helm.Records) cache.Options {
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
		if _, pods := obj.(*corev1.Pod); pods {
			by.Transform = podWithoutSpec
		}
		opts.ByObject[obj] = by
	}
	opts.DefaultNamespaces = NamespaceConfigs(watchNamespaces)
	return opts
}

// NamespaceConfigs limits a cache to the watched namespaces; nil (no namespace named): all.
func NamespaceConfigs(watchNamespaces []string) map[string]cache.Config {
	var out map[string]cache.Config
	for _, ns := range watchNamespaces {
		if out == nil {
			out = map[string]cache.Config{}
		}
		out[ns] = cache.Config{}
	}
	return out
}

// PartlyCachedKinds are the kinds Options caches only some objects of.
func PartlyCachedKinds() []client.Object {
	return slices.Collect(maps.Keys(partlyCached()))
}

func partlyCached() map[client.Object]cache.ByObject {
	memcachedPods, err := k8slabels.NewRequirement(labels.Name, selection.In, []string{labels.BackupName, labels.ChartName})
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

// podWithoutSpec is the cache's transform of memcached pods: the controllers read a pod's
// metadata and status (readiness, its address, why a container waits) and, of its spec, only
// hostNetwork (whose pods share the node's address), its stable name (hostname and subdomain, which
// a server's TLS certificate holds), the memcached container's arguments and resources (a
// server resized in place runs with other memory than its arguments say), and the names of the
// Secrets it mounts (a TLS Secret in use stays until no pod mounts it); the rest
// of the spec, as much again as the pod's status, is the template of its StatefulSet or
// Deployment, which the cache holds already.
func podWithoutSpec(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	pod.ManagedFields = nil
	spec := corev1.PodSpec{HostNetwork: pod.Spec.HostNetwork, Hostname: pod.Spec.Hostname, Subdomain: pod.Spec.Subdomain,
		Volumes: secretVolumesOnly(pod.Spec.Volumes)}
	if c := rollout.MemcachedContainer(&pod.Spec); c != nil {
		spec.Containers = []corev1.Container{{Name: c.Name, Args: c.Args, Resources: c.Resources}}
	}
	pod.Spec = spec
	return pod, nil
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
// objects of the chart (every version labels them with its name) and of MemcachedBackups; the
// namespaces' ResourceQuotas, whose limits and use bound the autopilot's steps (a few small
// objects a namespace); and OpenShift's APIServer config, whose TLS profile the metrics server
// follows (one object).
func operators(o client.Object) bool {
	switch o.(type) {
	case *cachev1.Memcached, *cachev1.MemcachedBackup, *corev1.ResourceQuota, *configv1.APIServer:
		return true
	}
	if u, ok := o.(*unstructured.Unstructured); ok && u.GroupVersionKind().Group == cachev1.GroupVersion.Group {
		return true
	}
	if ref := metav1.GetControllerOf(o); ref != nil && strings.HasPrefix(ref.APIVersion, cachev1.GroupVersion.Group+"/") {
		return true // a MemcachedBackup's Deployment, whatever someone did to its labels
	}
	l := o.GetLabels()
	return l[labels.Name] == labels.ChartName || l[labels.Name] == labels.BackupName || l[labels.PartOf] == labels.Operator
}

// New is the manager's cache (the manager's NewCache option), holding each Memcached once.
// The Helm side reads Memcacheds unstructured: its values are the spec as the user wrote it (a
// typed round trip would rewrite quantities such as 0.5Gi and drop false fields). The Go side's
// typed reads are answered from that copy, converted, instead of from a typed informer of their
// own that would hold every CR a second time. A typed watch of Memcacheds is refused: watch
// MemcachedObject().
func New(config *rest.Config, opts cache.Options) (cache.Cache, error) {
	c, err := cache.New(config, opts)
	if err != nil {
		return nil, err
	}
	return memcachedsOnce{c}, nil
}

// MemcachedObject is an empty Memcached as the cache holds them (unstructured), for watches.
func MemcachedObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(cachev1.GroupVersion.WithKind("Memcached"))
	return u
}

// StatusOf is the status of a Memcached of a watch event (unstructured, as the cache
// holds them), converted alone: predicates see every status write.
func StatusOf(o client.Object) (cachev1.MemcachedStatus, error) {
	var st cachev1.MemcachedStatus
	switch o := o.(type) {
	case *cachev1.Memcached:
		return o.Status, nil
	case *unstructured.Unstructured:
		if status, ok := o.Object["status"].(map[string]any); ok {
			return st, runtime.DefaultUnstructuredConverter.FromUnstructured(status, &st)
		}
		return st, nil
	}
	return st, fmt.Errorf("%T is not a Memcached", o)
}

// memcachedsOnce reads the cache's own unstructured copy (UnsafeDisableDeepCopy): the conversion
// copies every map, slice and pointer, and Memcached has no field of an interface type that it
// would share, so a caller changing what it read cannot change the cache.
type memcachedsOnce struct{ cache.Cache }

// HoldsMemcachedsOnce reports whether c was made by New.
func HoldsMemcachedsOnce(c cache.Cache) bool {
	_, ok := c.(memcachedsOnce)
	return ok
}

var errTypedMemcachedWatch = errors.New("the cache holds Memcacheds unstructured, once: watch managercache.MemcachedObject()")

func (c memcachedsOnce) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	mc, ok := obj.(*cachev1.Memcached)
	if !ok {
		return c.Cache.Get(ctx, key, obj, opts...)
	}
	u := MemcachedObject()
	if err := c.Cache.Get(ctx, key, u, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return err
	}
	*mc = cachev1.Memcached{}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, mc)
}

func (c memcachedsOnce) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	mcs, ok := list.(*cachev1.MemcachedList)
	if !ok {
		return c.Cache.List(ctx, list, opts...)
	}
	u := &unstructured.UnstructuredList{}
	u.SetGroupVersionKind(cachev1.GroupVersion.WithKind("MemcachedList"))
	if err := c.Cache.List(ctx, u, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return err
	}
	*mcs = cachev1.MemcachedList{ListMeta: metav1.ListMeta{ResourceVersion: u.GetResourceVersion(), Continue: u.GetContinue(),
		RemainingItemCount: u.GetRemainingItemCount()}, Items: make([]cachev1.Memcached, len(u.Items))}
	for i := range u.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Items[i].Object, &mcs.Items[i]); err != nil {
			return err
		}
	}
	return nil
}

func (c memcachedsOnce) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if _, typed := obj.(*cachev1.Memcached); typed {
		return nil, errTypedMemcachedWatch
	}
	return c.Cache.GetInformer(ctx, obj, opts...)
}

func (c memcachedsOnce) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if gvk == cachev1.GroupVersion.WithKind("Memcached") {
		return c.Cache.GetInformer(ctx, MemcachedObject(), opts...) // by kind the cache would make it typed
	}
	return c.Cache.GetInformerForKind(ctx, gvk, opts...)
}

func (c memcachedsOnce) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	if _, typed := obj.(*cachev1.Memcached); typed {
		return errTypedMemcachedWatch
	}
	return c.Cache.IndexField(ctx, obj, field, extract)
}

// MountsSecret reports whether a pod spec has a volume of Secret name (of the cached pods, whose
// volumes keep no more than the Secrets' names: secretVolumesOnly).
func MountsSecret(spec *corev1.PodSpec, name string) bool {
	for _, v := range spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == name {
			return true
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.Secret != nil && s.Secret.Name == name {
					return true
				}
			}
		}
	}
	return false
}

// secretVolumesOnly are the volumes of a pod that name Secrets, with no more than those names,
// and the volume of the copy of memcached's memory file (rollout.KeepsMemoryCopy).
func secretVolumesOnly(volumes []corev1.Volume) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range volumes {
		switch {
		case v.Name == rollout.MemoryCopyVolume && v.PersistentVolumeClaim != nil:
			out = append(out, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.PersistentVolumeClaim.ClaimName}}})
		case v.Secret != nil:
			out = append(out, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: v.Secret.SecretName}}})
		case v.Projected != nil:
			var sources []corev1.VolumeProjection
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					sources = append(sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: src.Secret.LocalObjectReference}})
				}
			}
			if sources != nil {
				out = append(out, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}})
			}
		}
	}
	return out
}
