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
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/example/memcached-operator/internal/helm/actionclient"
	"github.com/example/memcached-operator/internal/helm/library"
)

// sharedStatusClient is the Helm reconciler's client. The library writes a CR's whole status
// with only the fields it knows (conditions and deployedRelease), which would erase what the Go
// side reports there. This client turns that write into a merge into the live status: the
// library's conditions and deployedRelease's name replace theirs; the Go side's fields and
// conditions stay as they are. The library also writes the release's rendered manifest into
// deployedRelease, which is left out: status is for every reader of the CR, the manifest is in the
// release's records.
//
// While the Go side has not reported yet, the write that says the release is deployed also
// carries the Go side's first report (Options.FirstReport): one write for both sides.
type sharedStatusClient struct {
	client.Client
	live        client.Reader // the API server, uncached: when the cache's status is not current
	firstReport FirstReport   // Options.FirstReport
}

func (c sharedStatusClient) Status() client.SubResourceWriter {
	return sharedStatusWriter{SubResourceWriter: c.Client.Status(), live: c.live, cache: c.Client, firstReport: c.firstReport}
}

type sharedStatusWriter struct {
	client.SubResourceWriter
	live, cache client.Reader
	firstReport FirstReport
}

// libraryConditions are the condition types the library writes (its pkg/reconciler/internal/
// conditions); every other condition is the Go side's. Named by what the library owns, not by a
// list of the Go side's: a condition the Go side adds is its own without a second list to keep.
var libraryConditions = map[string]bool{library.ConditionInitialized: true, library.ConditionDeployed: true,
	library.ConditionReleaseFailed: true, library.ConditionIrreconcilable: true, library.ConditionPaused: true}

// FirstReport is the Go side's first report of a CR (Options.FirstReport): the CR's status, given
// in cr, with the Go side's fields and conditions added; nil when it has none to give yet.
type FirstReport func(ctx context.Context, cr *unstructured.Unstructured) (map[string]any, error)

// withFirstReport is the merged status with the Go side's first report, when it says the release
// is deployed, the Go side has not reported yet, and it has a report to give; else merged as it is.
func (w sharedStatusWriter) withFirstReport(ctx context.Context, u *unstructured.Unstructured, merged map[string]any) map[string]any {
	if w.firstReport == nil || !deployed(merged) || hasGoCondition(merged) {
		return merged
	}
	cr := &unstructured.Unstructured{Object: maps.Clone(u.Object)}
	cr.Object["status"] = merged
	report, err := w.firstReport(ctx, cr)
	if err != nil {
		// The Go side's own reconcile reports then: one more write, nothing lost.
		log.FromContext(ctx).Error(err, "the Go side's first report", "namespace", u.GetNamespace(), "name", u.GetName())
		return merged
	}
	if report == nil {
		return merged
	}
	return report
}

func (w sharedStatusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return w.SubResourceWriter.Update(ctx, obj, opts...)
	}
	written, _ := u.Object["status"].(map[string]any)
	cached := &unstructured.Unstructured{}
	cached.SetGroupVersionKind(u.GroupVersionKind())
	if err := w.cache.Get(ctx, client.ObjectKeyFromObject(u), cached); err == nil {
		// The library writes whenever its status differs from what it read, which, without the
		// manifest it never reads back, is every reconcile: nothing is sent when the merge leaves
		// the status as the cache has it.
		existing, _ := cached.Object["status"].(map[string]any)
		merged := w.withFirstReport(ctx, u, mergeHelmStatus(existing, written))
		if equality.Semantic.DeepEqual(merged, existing) {
			return nil
		}
		// The cache is usually current: write on its resourceVersion, without reading the CR from
		// the API server first. A conflict means the Go side (or the user) wrote since.
		u.Object["status"] = merged
		u.SetResourceVersion(cached.GetResourceVersion())
		if err := w.SubResourceWriter.Update(ctx, u, opts...); !apierrors.IsConflict(err) {
			return err
		}
	}
	// The status the cache had is gone: merge into the current one, as often as the Go side
	// writes in between.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current := &unstructured.Unstructured{}
		current.SetGroupVersionKind(u.GroupVersionKind())
		if err := w.live.Get(ctx, client.ObjectKeyFromObject(u), current); err != nil {
			return err
		}
		existing, _ := current.Object["status"].(map[string]any)
		u.Object["status"] = w.withFirstReport(ctx, u, mergeHelmStatus(existing, written))
		u.SetResourceVersion(current.GetResourceVersion())
		return w.SubResourceWriter.Update(ctx, u, opts...)
	})
}

// mergeHelmStatus is the live status with the library's part replaced by what it wrote: the name
// of its deployedRelease (the Go side reports its revision) and its conditions, followed by the Go
// side's conditions as they are live (the library wrote back whatever it had read of those).
func mergeHelmStatus(existing, written map[string]any) map[string]any {
	out := maps.Clone(existing)
	if out == nil {
		out = map[string]any{}
	}
	if rel, ok := written["deployedRelease"].(map[string]any); ok {
		deployed := map[string]any{"name": rel["name"]}
		if prev, ok := existing["deployedRelease"].(map[string]any); ok && prev["name"] == rel["name"] && prev["revision"] != nil {
			deployed["revision"] = prev["revision"]
		}
		out["deployedRelease"] = deployed
	} else {
		delete(out, "deployedRelease")
	}
	var conds []any
	writtenConds, _ := written["conditions"].([]any)
	for _, c := range writtenConds {
		if libraryConditions[conditionType(c)] {
			conds = append(conds, withOwnReason(c))
		}
	}
	existingConds, _ := existing["conditions"].([]any)
	for _, c := range existingConds {
		if !libraryConditions[conditionType(c)] {
			conds = append(conds, c)
		}
	}
	out["conditions"] = conds
	return out
}

// deployed reports whether a status has the library's Deployed condition True.
func deployed(status map[string]any) bool {
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		if m, _ := c.(map[string]any); conditionType(c) == library.ConditionDeployed && m["status"] == "True" {
			return true
		}
	}
	return false
}

// hasGoCondition reports whether a status has a condition of the Go side.
func hasGoCondition(status map[string]any) bool {
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		if !libraryConditions[conditionType(c)] {
			return true
		}
	}
	return false
}

func conditionType(c any) string {
	m, _ := c.(map[string]any)
	t, _ := m["type"].(string)
	return t
}

// withOwnReason gives a condition of the library that reports a refused release record the
// reason of its own, ReleaseRecordRefused: the library gives its conditions the reason of the
// step that failed (ErrorGettingReleaseState, UninstallError, ...) and the error's text, which
// starts, where Helm wraps it, with the error's own (actionclient.RecordRefusedError).
func withOwnReason(c any) any {
	m, ok := c.(map[string]any)
	if msg, _ := m["message"].(string); !ok || m["status"] != "True" || !strings.Contains(msg, actionclient.ReasonRecordRefused+": ") {
		return c
	}
	out := maps.Clone(m)
	out["reason"] = actionclient.ReasonRecordRefused
	return out
}
