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
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/releaseutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/example/memcached-operator/internal/helm/library"
)

// Fence is the second fence around a release, behind the seal (seal.go): even a record the
// operator wrote cannot make Helm reach beyond its release. Every create, update, patch and
// delete that Helm sends for a release (install, upgrade, drift repair, uninstall; the library's
// and Helm's own code alike) passes through its transport (Wrap), which lets through only
//   - objects in the CR's namespace,
//   - of the kinds the chart renders (ChartKinds),
//   - and, to update, patch or delete, objects that carry this release's ownership and nobody
//     else's: Helm's release annotations for this CR's name and namespace, the CR (by UID) as
//     their controller (releaseOwns).
//
// A create, update or patch outside the fence fails the action (HTTP 403), which the CR reports.
// A delete outside it is skipped: Helm is told the object is gone (404, which its uninstall and
// upgrade pass over), so that an uninstall never hangs on an object that is not the release's,
// and the CR gets a Warning Event that names the object left alone.
type Fence struct {
	kinds    map[schema.GroupKind]bool // the chart renders them
	retired  map[schema.GroupKind]bool // earlier chart versions rendered them: delete only
	mapper   meta.RESTMapper
	live     client.Reader // reads the objects' metadata, uncached: what Helm is about to change
	recorder events.EventRecorder
}

// NewFence fences the releases of chrt: the kinds its templates render, and retired, the kinds
// earlier chart versions rendered that an upgrade may still have to delete.
func NewFence(chrt *chart.Chart, mapper meta.RESTMapper, live client.Reader, recorder events.EventRecorder, retired ...schema.GroupKind) (*Fence, error) {
	kinds, err := ChartKinds(chrt)
	if err != nil {
		return nil, err
	}
	f := &Fence{kinds: map[schema.GroupKind]bool{}, retired: map[schema.GroupKind]bool{}, mapper: mapper, live: live, recorder: recorder}
	for _, gk := range kinds {
		f.kinds[gk] = true
	}
	for _, gk := range retired {
		f.retired[gk] = true
	}
	return f, nil
}

var (
	templateAPIVersion = regexp.MustCompile(`(?m)^apiVersion:[ \t]*(.*?)[ \t]*$`)
	templateKind       = regexp.MustCompile(`(?m)^kind:[ \t]*(.*?)[ \t]*$`)
)

// ChartKinds are the kinds a chart's templates render, read from each document's top-level
// apiVersion and kind, which must be literal (no template expression): what the fence lets
// through is then visible in the chart.
func ChartKinds(chrt *chart.Chart) ([]schema.GroupKind, error) {
	var kinds []schema.GroupKind
	for _, t := range chrt.Templates {
		if !strings.HasSuffix(t.Name, ".yaml") && !strings.HasSuffix(t.Name, ".yml") {
			continue
		}
		versions := templateAPIVersion.FindAllSubmatch(t.Data, -1)
		names := templateKind.FindAllSubmatch(t.Data, -1)
		if len(versions) != len(names) {
			return nil, fmt.Errorf("chart %s, template %s: %d apiVersion lines and %d kind lines: each object needs both, at the start of a line",
				chrt.Name(), t.Name, len(versions), len(names))
		}
		for i := range versions {
			apiVersion, kind := string(versions[i][1]), string(names[i][1])
			if strings.ContainsAny(apiVersion+kind, "{} \t\"'") || apiVersion == "" || kind == "" {
				return nil, fmt.Errorf("chart %s, template %s: apiVersion %q and kind %q must be literal", chrt.Name(), t.Name, apiVersion, kind)
			}
			gv, err := schema.ParseGroupVersion(apiVersion)
			if err != nil {
				return nil, fmt.Errorf("chart %s, template %s: %w", chrt.Name(), t.Name, err)
			}
			if gk := gv.WithKind(kind).GroupKind(); !slices.Contains(kinds, gk) {
				kinds = append(kinds, gk)
			}
		}
	}
	if len(kinds) == 0 {
		return nil, fmt.Errorf("chart %s renders no kind", chrt.Name())
	}
	return kinds, nil
}

// releaseOwns says why obj is not the release of cr's (nil: it is). The release marks what it
// makes twice: Helm's release annotations (name and namespace) and the CR, by UID, as
// controller. An object must carry at least one of the two marks, and no mark of anyone else:
// no other release's annotations, no other controller. (The library's drift repair creates a
// missing object from the release's manifest, which lacks Helm's annotations: such an object
// carries the controller mark alone.)
func releaseOwns(obj metav1.Object, cr client.Object) error {
	a := obj.GetAnnotations()
	name, hasName := a[library.ReleaseNameAnnotation]
	namespace, hasNamespace := a[library.ReleaseNamespaceAnnotation]
	annotated := hasName || hasNamespace
	if annotated && (name != cr.GetName() || namespace != cr.GetNamespace()) {
		return fmt.Errorf("it carries the Helm annotations of release %s/%s", namespace, name)
	}
	ref := metav1.GetControllerOf(obj)
	switch {
	case ref != nil && ref.UID != cr.GetUID():
		return fmt.Errorf("its controller is %s %s (uid %s), not this one", ref.Kind, ref.Name, ref.UID)
	case ref == nil && !annotated:
		return fmt.Errorf("it carries neither the Helm annotations of release %s/%s nor a controller reference to the %s",
			cr.GetNamespace(), cr.GetName(), cr.GetObjectKind().GroupVersionKind().Kind)
	}
	return nil
}

// FenceError says why the fence refused a request.
type FenceError struct {
	Verb, Kind, Namespace, Name string
	Why                         string
}

func (e *FenceError) Error() string {
	return fmt.Sprintf("the operator refused to %s %s %s: %s", e.Verb, e.Kind, objectName(e.Namespace, e.Name), e.Why)
}

func objectName(namespace, name string) string {
	switch {
	case namespace == "":
		return name + " (cluster-scoped)"
	case name == "":
		return "in namespace " + namespace
	}
	return namespace + "/" + name
}

// admit says why the release of cr may not do verb to the object (nil: it may). gk is empty for
// a resource the API server does not serve.
func (f *Fence) admit(ctx context.Context, cr client.Object, verb string, gvk schema.GroupVersionKind, namespace, name string) error {
	refuse := func(why string) error {
		return &FenceError{Verb: verb, Kind: gvk.Kind, Namespace: namespace, Name: name, Why: why}
	}
	switch {
	case namespace != cr.GetNamespace():
		return refuse(fmt.Sprintf("it is outside namespace %s of %s %s", cr.GetNamespace(), cr.GetObjectKind().GroupVersionKind().Kind, cr.GetName()))
	case f.retired[gvk.GroupKind()] && !f.kinds[gvk.GroupKind()] && verb != "delete":
		return refuse("the chart no longer renders objects of that kind: the release may only delete its own")
	case !f.kinds[gvk.GroupKind()] && !f.retired[gvk.GroupKind()]:
		return refuse("the chart renders no object of that kind")
	case verb == "create":
		return nil
	}
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(gvk)
	if err := f.live.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // nothing to protect: the API server answers as it would
		}
		return refuse(fmt.Sprintf("its owner could not be read: %v", err))
	}
	if err := releaseOwns(live, cr); err != nil {
		return refuse(err.Error())
	}
	return nil
}

// CheckManifest says why a release manifest of cr names an object beyond the fence (nil: none
// does): an object of another namespace or of a kind the chart does not render, or one that
// exists and is not the release's.
func (f *Fence) CheckManifest(ctx context.Context, cr client.Object, manifest string) error {
	for _, doc := range releaseutil.SplitManifests(manifest) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			return fmt.Errorf("read the manifest: %w", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		namespace := u.GetNamespace()
		if namespace == "" {
			namespace = cr.GetNamespace() // as Helm applies it
		}
		gvk := u.GroupVersionKind()
		if gvk.Kind == "" {
			return errors.New("the manifest holds an object without a kind")
		}
		verb := "delete" // what an uninstall or an upgrade from this record could do to it
		if err := f.admit(ctx, cr, verb, gvk, namespace, u.GetName()); err != nil {
			return err
		}
	}
	return nil
}

// Wrap returns rest config base with its transport fenced to the release of cr.
func (f *Fence) Wrap(cr client.Object, base *rest.Config) *rest.Config {
	cfg := rest.CopyConfig(base)
	// An API server behind a proxy may be served under a path (https://proxy/k8s/clusters/c1).
	prefix := ""
	if u, err := url.Parse(cfg.Host); err == nil {
		prefix = strings.TrimSuffix(u.Path, "/")
	}
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return fencedTransport{next: next, fence: f, cr: cr, prefix: prefix}
	})
	return cfg
}

type fencedTransport struct {
	next   http.RoundTripper
	fence  *Fence
	cr     client.Object
	prefix string // of every request's path (Wrap)
}

// requestPath is a resource request's path: /api/v1 or /apis/GROUP/VERSION, an optional
// namespaces/NS, then RESOURCE, NAME and SUBRESOURCE as far as given.
var requestPath = regexp.MustCompile(`^/(?:api/(v1)|apis/([^/]+)/([^/]+))(?:/namespaces/([^/]+))?/([^/]+)(?:/([^/]+))?(?:/([^/]+))?$`)

var fenceVerbs = map[string]string{http.MethodPost: "create", http.MethodPut: "update", http.MethodPatch: "patch", http.MethodDelete: "delete"}

func (t fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	verb, mutating := fenceVerbs[req.Method]
	if !mutating {
		return t.next.RoundTrip(req)
	}
	err := t.check(req, verb)
	if err == nil {
		return t.next.RoundTrip(req)
	}
	if req.Body != nil {
		_ = req.Body.Close() // a RoundTripper closes the body, also of a request it does not send
	}
	var fenced *FenceError
	if !errors.As(err, &fenced) {
		return nil, err
	}
	// The object is the Event's related object: Events of one reason on one CR are otherwise
	// merged into one series, which shows only the first object's.
	related := &corev1.ObjectReference{Kind: fenced.Kind, Namespace: fenced.Namespace, Name: fenced.Name}
	if verb == "delete" {
		t.fence.recorder.Eventf(t.cr, related, corev1.EventTypeWarning, "ObjectLeftAlone", "DeleteObject",
			"Release %s did not delete %s %s, which is not the release's: %s", t.cr.GetName(), fenced.Kind, objectName(fenced.Namespace, fenced.Name), fenced.Why)
		return statusResponse(req, apierrors.NewNotFound(schema.GroupResource{Resource: fenced.Kind}, fenced.Name).ErrStatus, http.StatusNotFound), nil
	}
	t.fence.recorder.Eventf(t.cr, related, corev1.EventTypeWarning, "ObjectOutsideRelease", strings.ToUpper(verb[:1])+verb[1:]+"Object",
		"Release %s: %v", t.cr.GetName(), fenced)
	return statusResponse(req, apierrors.NewForbidden(schema.GroupResource{Resource: fenced.Kind}, fenced.Name, fenced).ErrStatus, http.StatusForbidden), nil
}

// check says why the request may not pass (a FenceError), or nil.
func (t fencedTransport) check(req *http.Request, verb string) error {
	m := requestPath.FindStringSubmatch(strings.TrimPrefix(req.URL.Path, t.prefix))
	if m == nil {
		return &FenceError{Verb: verb, Kind: req.URL.Path, Why: "it is not a request for a namespaced object"}
	}
	gvr := schema.GroupVersionResource{Group: m[2], Version: m[1] + m[3], Resource: m[5]}
	namespace, name := m[4], m[6]
	if m[7] != "" {
		// Helm writes objects, never a subresource (status, scale, a ServiceAccount's token, a
		// pod's eviction or binding): a request for one is not the release's.
		return &FenceError{Verb: verb, Kind: gvr.Resource + "/" + m[7], Namespace: namespace, Name: name, Why: "Helm writes no subresource"}
	}
	gvk, err := t.fence.mapper.KindFor(gvr)
	if err != nil {
		return &FenceError{Verb: verb, Kind: gvr.Resource, Namespace: namespace, Name: name, Why: "the API server does not serve that resource"}
	}
	err = t.fence.admit(req.Context(), t.cr, verb, gvk, namespace, name)
	var fenced *FenceError
	if verb == "create" && errors.As(err, &fenced) {
		fenced.Name = createdName(req) // for the message: the request goes no further
	}
	return err
}

// createdName is the name of the object a create request's JSON body holds ("" if it cannot
// tell). It reads the body.
func createdName(req *http.Request) string {
	if req.Body == nil || !strings.Contains(req.Header.Get("Content-Type"), "json") {
		return ""
	}
	body := req.Body
	defer body.Close()
	var obj struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	raw, err := io.ReadAll(io.LimitReader(body, 1<<20))
	if err != nil || json.Unmarshal(raw, &obj) != nil {
		return ""
	}
	return obj.Metadata.Name
}

// statusResponse is the API server's answer with status, as Helm's clients read it.
func statusResponse(req *http.Request, status metav1.Status, code int) *http.Response {
	status.Kind, status.APIVersion = "Status", "v1"
	body, _ := json.Marshal(status)
	return &http.Response{
		Status: fmt.Sprintf("%d %s", code, http.StatusText(code)), StatusCode: code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
