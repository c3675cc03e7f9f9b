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
	"reflect"
	"testing"
)

// The library's status write replaces its own part of the live status and keeps the Go side's.
func TestMergeHelmStatus(t *testing.T) {
	goConditions := map[string]bool{"Available": true, "Progressing": true}
	cond := func(typ, status string) map[string]any { return map[string]any{"type": typ, "status": status} }
	for _, tc := range []struct {
		name              string
		existing, written map[string]any
		want              map[string]any
	}{
		{
			name:     "a first write onto an empty status",
			existing: nil,
			written:  map[string]any{"conditions": []any{cond("Deployed", "True")}, "deployedRelease": map[string]any{"name": "m", "manifest": "..."}},
			want:     map[string]any{"conditions": []any{cond("Deployed", "True")}, "deployedRelease": map[string]any{"name": "m"}},
		},
		{
			name: "the Go side's fields and conditions stay as they are live; the library's stale copy of them is dropped",
			existing: map[string]any{"version": "1.6.39", "readyReplicas": int64(3),
				"conditions": []any{cond("Deployed", "False"), cond("Available", "True")}},
			written: map[string]any{"conditions": []any{cond("Deployed", "True"), cond("Available", "False")}},
			want: map[string]any{"version": "1.6.39", "readyReplicas": int64(3),
				"conditions": []any{cond("Deployed", "True"), cond("Available", "True")}},
		},
		{
			name:     "the revision the Go side reports stays while the release is the same",
			existing: map[string]any{"deployedRelease": map[string]any{"name": "m", "revision": int64(4)}},
			written:  map[string]any{"deployedRelease": map[string]any{"name": "m", "manifest": "..."}},
			want:     map[string]any{"conditions": []any(nil), "deployedRelease": map[string]any{"name": "m", "revision": int64(4)}},
		},
		{
			name:     "an uninstalled release leaves status",
			existing: map[string]any{"deployedRelease": map[string]any{"name": "m", "revision": int64(4)}},
			written:  map[string]any{"conditions": []any{cond("Deployed", "False")}},
			want:     map[string]any{"conditions": []any{cond("Deployed", "False")}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mergeHelmStatus(tc.existing, tc.written, goConditions); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("mergeHelmStatus =\n%#v\nwant\n%#v", got, tc.want)
			}
		})
	}
}
