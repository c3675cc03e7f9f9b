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

package values

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/autopilotsize"
	"github.com/example/memcached-operator/internal/helm"
	"github.com/example/memcached-operator/internal/operand"
	"github.com/example/memcached-operator/internal/tlsprofile"
)

// Translator turns a Memcached CR into chart values. It is a pure function of the CR and
// the operator's configuration (computed on every reconcile, never written back into the CR):
//   - image fields the CR leaves unset come from the operator's default image
//     (RELATED_IMAGE_MEMCACHED), when that differs from the chart's own default;
//   - a memcached version the operator does not run is refused: the release keeps what it runs,
//     the CR's Irreconcilable condition says why and a Warning Event UnsupportedVersion is
//     recorded;
//   - while spec.autoscaling is on, the size the autopilot chose (status.autopilot) takes the
//     place of replicaCount and memcached.maxMemoryMB (autopilotsize.IntoValues);
//   - a CR whose name cannot be a release's (made before admission checked names) is refused the
//     same way; deleting it is never held up (see actionclient's Uninstall).
//
// The operator's proxy settings do not reach the pods: memcached and its exporter make no
// outbound calls.
func Translator(defaults Operator, recorder events.EventRecorder) helm.Translator {
	return func(_ context.Context, obj *unstructured.Unstructured) (map[string]any, error) {
		vals, err := Translate(obj, defaults)
		var unsupported *operand.ErrUnsupportedVersion
		if errors.As(err, &unsupported) {
			recorder.Eventf(obj, nil, corev1.EventTypeWarning, "UnsupportedVersion", "TranslateValues", "%v; the pods keep the version they run", err)
		}
		return vals, err
	}
}

// Operator is what the operator's settings add to a CR's values.
type Operator struct {
	// Image fills the image fields a CR leaves unset; nil: the chart's own image applies.
	Image *operand.Image
	// ExporterImage does the same for metrics.image.
	ExporterImage *operand.Image
	// Namespace is the operator's: the NetworkPolicy lets its pods reach memcached ("" when it
	// runs outside a cluster).
	Namespace string
	// TLSProfile is the cluster's TLS security profile, which memcached follows when it serves
	// TLS; nil: Intermediate.
	TLSProfile *tlsprofile.Server
}

// Translate is Translator's work, exported for table tests.
func Translate(obj *unstructured.Unstructured, defaults Operator) (map[string]any, error) {
	if err := cachev1.ValidName(obj.GetKind(), obj.GetName()); err != nil {
		return nil, fmt.Errorf("%w; this Memcached was made before the name was checked and cannot be reconciled: create it again under a valid name, and delete this one", err)
	}
	spec, _, err := unstructured.NestedMap(obj.Object, "spec")
	if err != nil {
		return nil, fmt.Errorf("read spec of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	vals := runtime.DeepCopyJSON(spec)
	if vals == nil {
		vals = map[string]any{}
	}

	fillImage(vals, defaults.Image, "image")
	fillImage(vals, defaults.ExporterImage, "metrics", "image")
	if img, _, _ := unstructured.NestedMap(vals, "image"); img != nil {
		tag, _ := img["tag"].(string)
		digest, _ := img["digest"].(string)
		if err := operand.CheckVersion(operand.Image{Tag: tag, Digest: digest}); err != nil {
			return nil, fmt.Errorf("spec.image: %w", err)
		}
	}
	if err := checkKeepCacheAcross(obj); err != nil {
		return nil, err
	}
	if defaults.Namespace != "" {
		vals["operatorNamespace"] = defaults.Namespace
	}
	if on, _, _ := unstructured.NestedBool(vals, "tls", "enabled"); on {
		// Only then: a profile change rolls out the caches that serve TLS, no other.
		vals["tlsProfile"] = memcachedTLSProfile(defaults.TLSProfile)
	}
	if err := autopilotsize.IntoValues(obj, vals); err != nil {
		return nil, err
	}
	return vals, nil
}

// memcachedTLSProfile is the profile as memcached takes it: its ssl_min_version (2 for TLS 1.2,
// 3 for 1.3; never below TLS 1.2, whatever the profile allows) and its TLS 1.2 ciphers.
func memcachedTLSProfile(profile *tlsprofile.Server) map[string]any {
	s, _ := tlsprofile.Named("Intermediate")
	if profile != nil {
		s = profile.Current()
	}
	if s.MinVersion >= tls.VersionTLS13 {
		return map[string]any{"minVersion": int64(3), "ciphers": ""}
	}
	return map[string]any{"minVersion": int64(2), "ciphers": strings.Join(s.OpenSSLCiphers, ":")}
}

// fillImage fills the fields of the image at path that vals leaves unset from def (nil: nothing
// to fill, the chart's own default applies). A tag or digest in vals keeps def's tag and digest out.
func fillImage(vals map[string]any, def *operand.Image, path ...string) {
	if def == nil {
		return
	}
	img, _, _ := unstructured.NestedMap(vals, path...)
	if img == nil {
		img = map[string]any{}
	}
	if s, _ := img["repository"].(string); s == "" {
		img["repository"] = def.Repository
	}
	tag, _ := img["tag"].(string)
	digest, _ := img["digest"].(string)
	if tag == "" && digest == "" {
		// A default pinned by digest alone leaves the chart's tag in place (the digest wins).
		if def.Tag != "" {
			img["tag"] = def.Tag
		}
		if def.Digest != "" {
			img["digest"] = def.Digest
		}
	}
	_ = unstructured.SetNestedMap(vals, img, path...) // vals is JSON: nothing on the path is not a map
}

// minWarmMemoryMB is the least item memory memcached starts with its memory file: it gives each
// slab class a page from the start ("max memory must be at least 39 megabytes").
const minWarmMemoryMB = 39

// checkKeepCacheAcross refuses what keepCacheAcross Restarts cannot run: too little item memory
// for memcached's memory file, or an autopilot that would grow memory memcached cannot change;
// and persistence without it (there is no memory file to keep).
// (Admission cannot: a rule on the spec of the CRD of 1.2.0 would stop OLM v1's upgrade.)
func checkKeepCacheAcross(obj *unstructured.Unstructured) error {
	if keep, _, _ := unstructured.NestedString(obj.Object, "spec", "keepCacheAcross"); keep != cachev1.KeepAcrossRestarts {
		if on, _, _ := unstructured.NestedBool(obj.Object, "spec", "persistence", "enabled"); on {
			return fmt.Errorf("persistence needs keepCacheAcross Restarts: only a server that keeps its items in a memory file, saved when its pod stops, has items for a volume to keep")
		}
		return nil
	}
	spec, _, err := autopilotsize.Inputs(obj)
	if err != nil {
		return err
	}
	mb := autopilotsize.SpecMaxMemoryMB(spec)
	if mb < minWarmMemoryMB {
		return fmt.Errorf("keepCacheAcross Restarts needs memcached.maxMemoryMB of at least %d, not %d: memcached's memory file holds a page of every slab class from the start", minWarmMemoryMB, mb)
	}
	if as := spec.Autoscaling; as != nil && as.MaxMemoryMB != nil && *as.MaxMemoryMB > mb {
		return fmt.Errorf("autoscaling.maxMemoryMB %d cannot be above memcached.maxMemoryMB %d with keepCacheAcross Restarts: a server that restarts with its items keeps its item memory, so the autopilot adds servers instead (autoscaling.maxReplicas)", *as.MaxMemoryMB, mb)
	}
	return nil
}
