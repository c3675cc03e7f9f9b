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

// Package memcachedstatus is how the Go side writes a Memcached's status: a writer per
// controller that owns its part (conditions and fields) and writes only that, by server-side
// apply, and the helpers that read and set one condition.
package memcachedstatus

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// Writer is one of the Go side's writers of a Memcached's status: the conditions and fields
// it alone writes (docs/development.md, "Who writes a Memcached's status"). It writes them by
// server-side apply as a field manager of its own: a write carries only its part, so it can
// overwrite no other writer's, whatever that writer did between its read and this write.
type Writer struct {
	manager    string
	conditions []string
	// fields are the JSON names of its fields of status, a nested one by its dotted path.
	fields []string
}

// The writers, one per controller; each writes as a field manager of its own.
var (
	OperandWriter = Writer{manager: "memcached-operand",
		conditions: []string{cachev1.ConditionAvailable, cachev1.ConditionProgressing, cachev1.ConditionResizing, cachev1.ConditionCacheWarm},
		fields:     []string{"replicas", "readyReplicas", "updatedReplicas", "servers", "readyServers", "serversConfigMap", "version", "deployedRelease.revision", "rollout"}}
	StatsWriter = Writer{manager: "memcached-stats",
		conditions: []string{cachev1.ConditionMemoryPressure, cachev1.ConditionConnectionsSaturated, cachev1.ConditionServersResponsive},
		fields:     []string{"stats"}}
	AutopilotWriter = Writer{manager: "memcached-autopilot",
		conditions: []string{cachev1.ConditionScalingActive, cachev1.ConditionScalingLimited},
		fields:     []string{"autopilot"}}
	TLSWriter = Writer{manager: "memcached-tls-controller",
		conditions: []string{cachev1.ConditionCertificatesReady},
		fields:     []string{"tls"}}
)

// ConflictRetry is how soon a reconcile whose write lost a race with another writer of the CR
// looks again, on the object as the other writer left it.
const ConflictRetry = 100 * time.Millisecond

// AfterWriteError is what a reconcile returns when its write of status failed with err. A
// conflict means another writer of the CR came first: look again soon, on the CR as it left it.
// A CR deleted meanwhile has nothing left to reconcile. Anything else is retried with backoff.
func AfterWriteError(err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: ConflictRetry}, nil
	}
	return ctrl.Result{}, client.IgnoreNotFound(err)
}

// Write makes the owner's part of mc's live status what st says it is, and leaves the rest as it
// is live. An apply of the part, then a patch for what the part no longer has but the live
// object still shows: a field that another manager co-owns (the full updates of releases before
// 1.3.0 made the operator's one manager own every field) outlives an apply that leaves it out.
// That patch is made on the applied object's resourceVersion: a conflict means someone wrote
// meanwhile, and the caller looks again.
func (o Writer) Write(ctx context.Context, c client.Client, mc *cachev1.Memcached, st *cachev1.MemcachedStatus) error {
	_, err := o.WriteOn(ctx, c, mc, st, "")
	return err
}

// WriteOn is Write on the resourceVersion rv of mc ("": any): a conflict means mc changed since
// it was read at rv. It returns the resourceVersion written; with an error too when the apply
// landed and only the patch after it failed: what st says is live then, and what the caller
// says of it (an Event) is due all the same.
func (o Writer) WriteOn(ctx context.Context, c client.Client, mc *cachev1.Memcached, st *cachev1.MemcachedStatus, rv string) (string, error) {
	want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(st)
	if err != nil {
		return "", err
	}
	part := map[string]any{}
	var conditions []any // the owner's, as want has them
	allConditions, _ := want["conditions"].([]any)
	for _, cond := range allConditions {
		if t, _ := cond.(map[string]any)["type"].(string); slices.Contains(o.conditions, t) {
			conditions = append(conditions, runtime.DeepCopyJSONValue(cond))
		}
	}
	if len(conditions) > 0 {
		part["conditions"] = conditions
	}
	for _, f := range o.fields {
		path := strings.Split(f, ".")
		if v, ok, _ := unstructured.NestedFieldNoCopy(want, path...); ok {
			if err := unstructured.SetNestedField(part, runtime.DeepCopyJSONValue(v), path...); err != nil {
				return "", err
			}
		}
	}
	applied := &unstructured.Unstructured{Object: map[string]any{"status": part}}
	applied.SetGroupVersionKind(cachev1.GroupVersion.WithKind("Memcached"))
	applied.SetNamespace(mc.Namespace)
	applied.SetName(mc.Name)
	applied.SetResourceVersion(rv)
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(applied), client.FieldOwner(o.manager), client.ForceOwnership); err != nil {
		return "", fmt.Errorf("write the status of Memcached %s/%s as %s: %w", mc.Namespace, mc.Name, o.manager, err)
	}

	// Where the live object (the apply's answer) differs from what the owner says, down to a
	// condition's message or a field of stats: what only another manager still owns.
	status := map[string]any{}
	if live, ok := applied.Object["status"].(map[string]any); ok {
		status = runtime.DeepCopyJSON(live)
	}
	stale := false
	ownedWant := map[string]any{}
	for _, cond := range conditions {
		ownedWant[cond.(map[string]any)["type"].(string)] = cond
	}
	liveConditions, _ := status["conditions"].([]any)
	var kept []any
	for _, cond := range liveConditions {
		t, _ := cond.(map[string]any)["type"].(string)
		switch w, ok := ownedWant[t]; {
		case !slices.Contains(o.conditions, t):
			kept = append(kept, cond)
		case !ok:
			stale = true // the owner no longer says it
		default:
			stale = stale || !sameJSON(cond, w)
			kept = append(kept, w)
		}
	}
	if len(kept) > 0 {
		status["conditions"] = kept
	} else {
		delete(status, "conditions")
	}
	for _, f := range o.fields {
		path := strings.Split(f, ".")
		w, says, _ := unstructured.NestedFieldNoCopy(want, path...)
		l, shows, _ := unstructured.NestedFieldNoCopy(status, path...)
		switch {
		case !says && shows:
			unstructured.RemoveNestedField(status, path...)
			stale = true
		case says && !sameJSON(w, l):
			if err := unstructured.SetNestedField(status, runtime.DeepCopyJSONValue(w), path...); err != nil {
				return "", err
			}
			stale = true
		}
	}
	if !stale {
		return applied.GetResourceVersion(), nil
	}
	trimmed := applied.DeepCopy()
	trimmed.Object["status"] = status
	if err := c.Status().Patch(ctx, trimmed, client.MergeFromWithOptions(applied, client.MergeFromWithOptimisticLock{}), client.FieldOwner(o.manager)); err != nil {
		return applied.GetResourceVersion(), fmt.Errorf("take what %s no longer says out of the status of Memcached %s/%s: %w", o.manager, mc.Namespace, mc.Name, err)
	}
	return trimmed.GetResourceVersion(), nil
}

// sameJSON tells whether a and b are the same JSON: a number the API server answered as an
// integer is the float the converter made of it.
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
