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
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"github.com/operator-framework/helm-operator-plugins/pkg/reconciler"
	sdkhandler "github.com/operator-framework/operator-lib/handler"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"
	"sigs.k8s.io/yaml"

	"github.com/example/memcached-operator/internal/helm/actionclient"
	"github.com/example/memcached-operator/internal/helm/library"
)

// setupController registers a Helm reconciler with the manager. It does what the library's
// Reconciler.SetupWithManager does, except that every watch has a predicate, so a reconcile is
// caused by a change someone else made and never by the operator's own writes (the library's
// watches take no predicates; an upstream option for them would remove this file):
//   - the CR: a change of its spec (generation), labels or annotations, or its deletion; not the
//     finalizer and status that reconciles write;
//   - the release records (by the release's name): their deletion; the operator writes them;
//   - the release's objects (see dependentWatches): not their creation, their status, or what
//     Kubernetes controllers record in them.
//
// Its queue serves namespaces in turns (newFairQueue).
//
// The periodic reconcile (RequeueAfter) re-checks everything else.
func setupController(mgr ctrl.Manager, r *reconciler.Reconciler, gvk schema.GroupVersionKind, workers int, selector *metav1.LabelSelector, dependents *dependentWatches, statusInputs []string) error {
	c, err := controller.New(library.ControllerName(gvk), mgr, controller.Options{Reconciler: r, MaxConcurrentReconciles: workers, NewQueue: newFairQueue})
	if err != nil {
		return err
	}
	primary := &unstructured.Unstructured{}
	primary.SetGroupVersionKind(gvk)

	var selected []predicate.Predicate
	if selector != nil {
		p, err := predicate.LabelSelectorPredicate(*selector)
		if err != nil {
			return fmt.Errorf("watch selector: %w", err)
		}
		selected = append(selected, p)
	}
	changedByUser := predicate.Or[client.Object](
		predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{},
		predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
		}},
		statusInputChanged(statusInputs))
	if err := c.Watch(source.Kind(mgr.GetCache(), client.Object(primary),
		&sdkhandler.InstrumentedEnqueueRequestForObject[client.Object]{},
		append(selected, changedByUser)...)); err != nil {
		return err
	}

	deletedOnly := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	// By the release's name, not the owner: deleting a refused record that names no owner (a
	// forged one) is the way out of its refusal, and the release goes on at once.
	toRelease := handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
		if name := o.GetLabels()[library.RecordNameLabel]; name != "" && actionclient.RecordSelector().Matches(labels.Set(o.GetLabels())) {
			return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
		}
		return nil
	})
	if err := c.Watch(source.Kind(mgr.GetCache(), client.Object(&corev1.Secret{}), toRelease, append(selected, deletedOnly)...)); err != nil {
		return err
	}

	if dependents != nil {
		dependents.start(c, mgr, primary)
	}
	ctrl.Log.WithName("setup").Info("watching resource", "group", gvk.Group, "version", gvk.Version, "kind", gvk.Kind)
	return nil
}

// statusInputChanged passes updates that change one of the status fields the values translation
// reads (Options.StatusInputs).
func statusInputChanged(fields []string) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, ok1 := e.ObjectOld.(*unstructured.Unstructured)
			after, ok2 := e.ObjectNew.(*unstructured.Unstructured)
			if !ok1 || !ok2 {
				return false
			}
			for _, f := range fields {
				path := append([]string{"status"}, strings.Split(f, ".")...)
				was, _, _ := unstructured.NestedFieldNoCopy(before.Object, path...)
				now, _, _ := unstructured.NestedFieldNoCopy(after.Object, path...)
				if !reflect.DeepEqual(was, now) {
					return true
				}
			}
			return false
		},
	}
}

// dependentWatches is a post-release hook that watches every kind a release contains, as the
// library's own hook does, and reconciles the release's CR when one of its objects is deleted or
// changed by someone other than the Kubernetes controllers that run it.
type dependentWatches struct {
	mu       sync.Mutex
	ctrl     controller.Controller
	mgr      ctrl.Manager
	owner    *unstructured.Unstructured
	watching map[schema.GroupVersionKind]bool
}

func (d *dependentWatches) start(c controller.Controller, mgr ctrl.Manager, owner *unstructured.Unstructured) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ctrl, d.mgr, d.owner = c, mgr, owner
	d.watching = map[schema.GroupVersionKind]bool{}
}

// Exec starts a watch for each kind of the release not yet watched. An object whose controller
// owner is the CR (the library's post-renderer sets that where Kubernetes allows it) is mapped
// back by its owner reference, any other by the annotations the post-renderer sets instead.
func (d *dependentWatches) Exec(owner *unstructured.Unstructured, rel release.Release, log logr.Logger) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	// The hook runs after every reconcile, and each install's manifest is new: its kinds are read
	// off its lines, and it is parsed only when one is not watched yet (each kind once).
	if gvks, ok := manifestKinds(rel.Manifest); ok && !slices.ContainsFunc(gvks, func(gvk schema.GroupVersionKind) bool { return !d.watching[gvk] }) {
		return nil
	}
	for _, manifest := range releaseutil.SplitManifests(rel.Manifest) {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
			return err
		}
		gvk := obj.GroupVersionKind()
		if gvk.Empty() || d.watching[gvk] {
			continue
		}
		var h handler.TypedEventHandler[client.Object, ctrl.Request] = &sdkhandler.EnqueueRequestForAnnotation[client.Object]{Type: owner.GroupVersionKind().GroupKind()}
		if ref := metav1.GetControllerOf(obj); ref != nil && ref.UID == owner.GetUID() {
			h = handler.TypedEnqueueRequestForOwner[client.Object](d.mgr.GetScheme(), d.mgr.GetRESTMapper(), d.owner, handler.OnlyControllerOwner())
		}
		if err := d.ctrl.Watch(source.Kind(d.mgr.GetCache(), actionclient.NewObject(d.mgr.GetScheme(), gvk), h, changedByOthers)); err != nil {
			return err
		}
		d.watching[gvk] = true
		log.V(1).Info("watching dependent resource", "apiVersion", gvk.GroupVersion(), "kind", gvk.Kind)
	}
	return nil
}

// manifestKinds is the kind of each object of a release manifest, read off its lines without
// parsing it: the post-renderer writes each object as YAML of a map, whose top-level keys start
// their line and whose nested lines are indented. ok is false when an object does not show its
// apiVersion and kind so (a manifest written otherwise), for the caller to parse it.
func manifestKinds(manifest string) (gvks []schema.GroupVersionKind, ok bool) {
	var apiVersion, kind string
	content := false
	end := func() bool {
		defer func() { apiVersion, kind, content = "", "", false }()
		if apiVersion == "" || kind == "" {
			return !content
		}
		gvks = append(gvks, schema.FromAPIVersionAndKind(apiVersion, kind))
		return true
	}
	for line := range strings.Lines(manifest) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "---"):
			if !end() {
				return nil, false
			}
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "apiVersion: "):
			apiVersion, content = strings.TrimPrefix(line, "apiVersion: "), true
			if !plainScalar(apiVersion) {
				return nil, false
			}
		case strings.HasPrefix(line, "kind: "):
			kind, content = strings.TrimPrefix(line, "kind: "), true
			if !plainScalar(kind) {
				return nil, false
			}
		default:
			content = true
		}
	}
	if !end() {
		return nil, false
	}
	return gvks, true
}

// plainScalar says whether a YAML value reads as written: not quoted, commented, a collection, an
// anchor, alias, tag or block (the parser says what those are).
func plainScalar(v string) bool {
	return !strings.ContainsAny(v, "\"' #{[&*!|>")
}

// controllerAnnotations are annotations that Kubernetes controllers write into objects they run.
var controllerAnnotations = []string{"deployment.kubernetes.io/revision"}

// changedByOthers passes a release object's deletion and any update other than to its status,
// its bookkeeping metadata and controllerAnnotations. Its creation is the release's own doing.
var changedByOthers = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, err1 := specified(e.ObjectOld)
		updated, err2 := specified(e.ObjectNew)
		return err1 != nil || err2 != nil || !reflect.DeepEqual(old, updated)
	},
}

// specified is an object without what others than its author write into it.
func specified(obj client.Object) (map[string]any, error) {
	var out map[string]any
	if u, ok := obj.(*unstructured.Unstructured); ok {
		out = maps.Clone(u.Object) // shallow: only top-level and metadata keys are dropped
	} else {
		var err error
		if out, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
			return nil, err
		}
	}
	delete(out, "status")
	if md, ok := out["metadata"].(map[string]any); ok {
		md = maps.Clone(md)
		delete(md, "resourceVersion")
		delete(md, "managedFields")
		delete(md, "generation") // a Deployment's also counts annotation changes: the spec is compared itself
		if annotations, ok := md["annotations"].(map[string]any); ok {
			annotations = maps.Clone(annotations)
			for _, a := range controllerAnnotations {
				delete(annotations, a)
			}
			md["annotations"] = annotations
			if len(annotations) == 0 {
				delete(md, "annotations")
			}
		}
		out["metadata"] = md
	}
	return out, nil
}
