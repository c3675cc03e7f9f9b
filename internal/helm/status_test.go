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
	"errors"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The library's status write replaces its own part of the live status and keeps the Go side's.
func TestMergeHelmStatus(t *testing.T) {
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
			// Every condition but the library's is the Go side's: CacheWarm, which no list of the
			// Go side's conditions named, was written back stale by the library's status writes.
			name:     "a condition of the Go side that no list names stays as it is live",
			existing: map[string]any{"conditions": []any{cond("Deployed", "True"), cond("CacheWarm", "True"), cond("CertificatesReady", "False")}},
			written: map[string]any{"conditions": []any{cond("Initialized", "True"), cond("Deployed", "True"), cond("ReleaseFailed", "False"),
				cond("CacheWarm", "Unknown"), cond("SomethingNew", "True")}},
			want: map[string]any{"conditions": []any{cond("Initialized", "True"), cond("Deployed", "True"), cond("ReleaseFailed", "False"),
				cond("CacheWarm", "True"), cond("CertificatesReady", "False")}},
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
			if got := mergeHelmStatus(tc.existing, tc.written); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("mergeHelmStatus =\n%#v\nwant\n%#v", got, tc.want)
			}
		})
	}
}

// The Go side's first report goes with the write that says the release is deployed, once.
func TestWithFirstReport(t *testing.T) {
	cond := func(typ, status string) map[string]any { return map[string]any{"type": typ, "status": status} }
	report := map[string]any{"conditions": []any{cond("Deployed", "True"), cond("Available", "False")}, "replicas": int64(0)}
	for _, tc := range []struct {
		name   string
		merged map[string]any
		give   map[string]any // what FirstReport returns
		err    error
		asked  bool
		want   map[string]any
	}{
		{
			name:   "deployed, the Go side not reported yet: the report is written",
			merged: map[string]any{"conditions": []any{cond("Deployed", "True")}},
			give:   report, asked: true, want: report,
		},
		{
			name:   "not deployed: nothing to report",
			merged: map[string]any{"conditions": []any{cond("Deployed", "False")}},
			give:   report, want: map[string]any{"conditions": []any{cond("Deployed", "False")}},
		},
		{
			name:   "the Go side has reported: its own reconcile writes what changes",
			merged: map[string]any{"conditions": []any{cond("Deployed", "True"), cond("Available", "True")}},
			give:   report, want: map[string]any{"conditions": []any{cond("Deployed", "True"), cond("Available", "True")}},
		},
		{
			name:   "no report to give yet: the library's status alone",
			merged: map[string]any{"conditions": []any{cond("Deployed", "True")}},
			asked:  true, want: map[string]any{"conditions": []any{cond("Deployed", "True")}},
		},
		{
			name:   "a report that fails: the library's status alone",
			merged: map[string]any{"conditions": []any{cond("Deployed", "True")}},
			give:   report, err: errors.New("boom"), asked: true,
			want: map[string]any{"conditions": []any{cond("Deployed", "True")}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "m", "namespace": "ns"}, "status": map[string]any{}}}
			asked := false
			w := sharedStatusWriter{firstReport: func(_ context.Context, got *unstructured.Unstructured) (map[string]any, error) {
				asked = true
				if !reflect.DeepEqual(got.Object["status"], tc.merged) || got.GetName() != "m" {
					t.Errorf("FirstReport got %#v, want the merged status on the CR", got.Object)
				}
				return tc.give, tc.err
			}}
			if got := w.withFirstReport(context.Background(), cr, tc.merged); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("withFirstReport =\n%#v\nwant\n%#v", got, tc.want)
			}
			if asked != tc.asked {
				t.Errorf("FirstReport asked: %v, want %v", asked, tc.asked)
			}
			if !reflect.DeepEqual(cr.Object["status"], map[string]any{}) {
				t.Errorf("the CR given was changed: %#v", cr.Object["status"])
			}
		})
	}
}
