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
	"io"
	"sync"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"github.com/operator-framework/helm-operator-plugins/pkg/manifestutil"
	sdkhandler "github.com/operator-framework/operator-lib/handler"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/postrender"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// The library's post-renderer (helmclient.DefaultPostRendererFunc) gives each object of a release
// its owner: a controller reference to the CR, or, for an object that cannot have one (in another
// namespace, cluster-scoped) or that the chart keeps on uninstall, the owner annotations. It parses
// the rendered manifest into objects, copies each, and writes the manifest again; Helm then
// parses that manifest once more into the same objects. Those two parses and the copies were
// a third of an install's CPU in the operator (bench/results/regression-55.md).
//
// ownerRenderer writes the same manifest, byte for byte (postrender_test.go checks it against the
// library's on the chart's renders), from one parse: it marks the parsed objects themselves and
// hands them to the action's kube client, whose next Build of exactly that manifest returns them
// (kubeClient.Build) instead of parsing it again. An install builds its manifest once, which takes
// them; an upgrade builds it twice (Helm's check of the manifest, then the upgrade), and only the
// first is saved.
type ownerRenderer struct {
	mapper meta.RESTMapper
	kc     kubeClient
	owner  client.Object
}

// libraryPostRenderer is the library's, for a kube client that is not this package's.
var libraryPostRenderer = helmclient.DefaultPostRendererFunc

var useOwnerRenderer sync.Once

// replacePostRenderer makes the library's action clients give owners with ownerRenderer: its
// default post-renderer is a package variable, its only hook.
func replacePostRenderer() {
	useOwnerRenderer.Do(func() {
		helmclient.DefaultPostRendererFunc = func(rm meta.RESTMapper, kc kube.Interface, owner client.Object) postrender.PostRenderer {
			if ours, ok := kc.(kubeClient); ok && ours.built != nil {
				return ownerRenderer{mapper: rm, kc: ours, owner: owner}
			}
			return libraryPostRenderer(rm, kc, owner)
		}
	})
}

func (r ownerRenderer) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	infos, err := r.kc.Client.Build(bytes.NewReader(in.Bytes()), false)
	if err != nil {
		return nil, err
	}
	ownerClusterScoped, err := clusterScoped(r.mapper, r.owner)
	if err != nil {
		return nil, err
	}
	out := &bytes.Buffer{}
	for _, info := range infos {
		u, ok := info.Object.(*unstructured.Unstructured)
		if !ok { // Helm's Build makes every object unstructured; the library's renderer handles others
			return libraryPostRenderer(r.mapper, r.kc, r.owner).Run(in)
		}
		// As the library's controllerutil.SupportsOwnerReference decides.
		ownerRef := ownerClusterScoped || info.Namespaced() && u.GetNamespace() == r.owner.GetNamespace()
		if ownerRef && !manifestutil.HasResourcePolicyKeep(u.GetAnnotations()) {
			u.SetOwnerReferences(append(u.GetOwnerReferences(), *metav1.NewControllerRef(r.owner, r.owner.GetObjectKind().GroupVersionKind())))
		} else if err := sdkhandler.SetOwnerAnnotations(r.owner, u); err != nil {
			return nil, err
		}
		data, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(data)
	}
	r.kc.built.keep(out.String(), infos)
	return out, nil
}

// clusterScoped says whether obj's kind is cluster-scoped.
func clusterScoped(mapper meta.RESTMapper, obj client.Object) (bool, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, err
	}
	return m.Scope.Name() == meta.RESTScopeNameRoot, nil
}

// builtManifest is the manifest ownerRenderer wrote last in an action and the objects it parsed it
// into, until a Build of that manifest takes them.
type builtManifest struct {
	mu       sync.Mutex
	manifest string
	infos    kube.ResourceList
}

func (b *builtManifest) keep(manifest string, infos kube.ResourceList) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.manifest, b.infos = manifest, infos
}

// take is the objects of manifest, once; nil when it is not the manifest kept.
func (b *builtManifest) take(manifest []byte) kube.ResourceList {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.infos == nil || string(manifest) != b.manifest {
		return nil
	}
	infos := b.infos
	b.manifest, b.infos = "", nil
	return infos
}

// Build is Helm's, except for the manifest the owner renderer just wrote: its objects are parsed
// already. Helm builds without validation here (skipOpenAPIValidation), which is all the
// renderer's parse did.
func (c kubeClient) Build(reader io.Reader, validate bool) (kube.ResourceList, error) {
	if c.built == nil || validate {
		return c.Client.Build(reader, validate)
	}
	manifest, err := io.ReadAll(reader)
	if err != nil {
		return nil, err
	}
	if infos := c.built.take(manifest); infos != nil {
		return infos, nil
	}
	return c.Client.Build(bytes.NewReader(manifest), validate)
}
