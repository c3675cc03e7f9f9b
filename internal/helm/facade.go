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

	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/example/memcached-operator/internal/helm/actionclient"
)

// What the operator's own code takes from Helm and the library, in types of this package: Helm's
// and the library's types stay inside internal/helm, so that a move to another Helm (see
// docs/development.md, the engine) touches this package alone.

// Rendered is a release as the kind's code reads it: revision, deployed or not, manifest.
type Rendered = actionclient.Rendered

// BeforeUpgrade prepares a release's objects before Helm applies an upgrade (Options).
type BeforeUpgrade = actionclient.BeforeUpgrade

// Translator turns a CR into the chart's values (Options).
type Translator func(ctx context.Context, cr *unstructured.Unstructured) (map[string]any, error)

// Watch is one entry of watches.yaml: a kind and its chart.
type Watch = watches.Watch

// Chart is a loaded chart (Watch.Chart).
type Chart = chart.Chart

// RenderedOf is a Helm release as the kind's code reads it.
func RenderedOf(rel *release.Release) *Rendered { return actionclient.RenderedOf(rel) }

// LoadWatches reads watches.yaml, with each entry's chart loaded.
func LoadWatches(file string) ([]Watch, error) { return watches.Load(file) }

// ChartValues are the values.yaml of a chart.
func ChartValues(c *Chart) map[string]any { return c.Values }

// ObjectsOf decodes the objects of a kind in a release manifest, in no particular order.
func ObjectsOf[T any](manifest, apiVersion, kind string) []*T {
	var out []*T
	for _, doc := range releaseutil.SplitManifests(manifest) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil || meta.Kind != kind || meta.APIVersion != apiVersion {
			continue
		}
		o := new(T)
		if err := yaml.Unmarshal([]byte(doc), o); err == nil {
			out = append(out, o)
		}
	}
	return out
}
