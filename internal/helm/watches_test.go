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
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// manifestKinds reads the kinds a parse of the manifest finds, or says it cannot.
func TestManifestKinds(t *testing.T) {
	marshal := func(objs ...map[string]any) string {
		var b strings.Builder
		for _, o := range objs {
			data, err := yaml.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			b.WriteString("---\n" + string(data))
		}
		return b.String()
	}
	written := marshal(
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"},
			"data": map[string]any{"x": "kind: Fake\napiVersion: fake/v9\n---\nkind: Other\n"}},
		map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": map[string]any{"name": "b"},
			"spec": map[string]any{"template": map[string]any{"kind": "NotTopLevel"}}},
		map[string]any{"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": map[string]any{"name": "c"}},
	)
	parsed := func(manifest string) []schema.GroupVersionKind {
		var out []schema.GroupVersionKind
		for _, doc := range releaseutil.SplitManifests(manifest) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
				t.Fatal(err)
			}
			if gvk := u.GroupVersionKind(); !gvk.Empty() {
				out = append(out, gvk)
			}
		}
		return out
	}
	byName := func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) }
	for _, c := range []struct {
		name, manifest string
		ok             bool
	}{
		{"as the post-renderer writes it, a block of text that looks like a kind included", written, true},
		{"with comments and empty documents", "---\n# Source: x.yaml\n\n---\n" + written + "---\n", true},
		{"a quoted kind", "---\napiVersion: v1\nkind: \"ConfigMap\"\nmetadata:\n  name: a\n", false},
		{"an object without its kind on a line of its own", "---\n{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n", false},
		{"a kind with a comment after it", "---\napiVersion: v1\nkind: ConfigMap # the config\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := manifestKinds(c.manifest)
			if ok != c.ok {
				t.Fatalf("ok %v, want %v (kinds %v)", ok, c.ok, got)
			}
			if want := parsed(c.manifest); ok && !slices.Equal(slices.SortedFunc(slices.Values(got), byName), slices.SortedFunc(slices.Values(want), byName)) {
				t.Errorf("kinds %v, a parse finds %v", got, want)
			}
		})
	}
}
