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

package controllers_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// A spec that failed leaves in its report, beside the workers' stacks, what the operator left in
// the spec's namespaces: each Memcached's conditions and change, each StatefulSet, the last
// Events. CI keeps only the end of a long log, where hack/failures prints this entry and the
// operator's last log lines on these namespaces: enough to tell a slow operator from a wrong one
// when a spec failed once in a run.

// specNamespaces are the namespaces the running spec made (newNamespace).
var specNamespaces []string

var _ = BeforeEach(func() { specNamespaces = nil })

var _ = JustAfterEach(func() {
	if CurrentSpecReport().Failed() && len(specNamespaces) > 0 {
		// Not printed by Ginkgo beside the failure: hack/failures prints it, cut to a few lines.
		AddReportEntry(namespaceStateEntry, namespaceState(context.Background(), specNamespaces), ReportEntryVisibilityNever)
	}
})

// namespaceStateEntry names the report entry (hack/failures prints it, and takes the namespaces
// from its first line).
const namespaceStateEntry = "namespace state"

// namespaceState says, in a few lines, what namespaces hold of the operator's work.
func namespaceState(ctx context.Context, namespaces []string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out := []string{"namespaces: " + strings.Join(namespaces, " ")}
	add := func(format string, args ...any) {
		out = append(out, shorten(strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " "), 400))
	}
	for _, ns := range namespaces {
		mcs := &cachev1.MemcachedList{}
		if err := k8sClient.List(ctx, mcs, client.InNamespace(ns)); err != nil {
			add("%s: list Memcacheds: %v", ns, err)
		}
		for _, mc := range mcs.Items {
			add("Memcached %s/%s generation %d", ns, mc.Name, mc.Generation)
			for _, c := range mc.Status.Conditions {
				add("  %s=%s %s since %s: %s", c.Type, c.Status, c.Reason, c.LastTransitionTime.Format(time.TimeOnly), c.Message)
			}
			if r := mc.Status.Rollout; r != nil && r.Change != nil {
				add("  change %q way %s phase %s held %d: %s", r.Change.What, r.Change.Way, r.Change.Phase, r.Change.Held, r.Change.Message)
			}
		}
		sets := &appsv1.StatefulSetList{}
		_ = k8sClient.List(ctx, sets, client.InNamespace(ns))
		for _, s := range sets.Items {
			add("StatefulSet %s uid %s claims %d deleting %t", s.Name, s.UID, len(s.Spec.VolumeClaimTemplates), s.DeletionTimestamp != nil)
		}
		events := &corev1.EventList{}
		_ = k8sClient.List(ctx, events, client.InNamespace(ns))
		slices.SortStableFunc(events.Items, func(a, b corev1.Event) int { return lastSeen(a).Compare(lastSeen(b)) })
		for _, e := range events.Items[max(0, len(events.Items)-8):] {
			add("Event %s %s: %s", e.InvolvedObject.Kind, e.Reason, e.Message)
		}
	}
	return strings.Join(out, "\n")
}

// lastSeen is when an Event was last recorded: a repeated one keeps its first creation time.
func lastSeen(e corev1.Event) time.Time {
	t := e.CreationTimestamp.Time
	for _, at := range []time.Time{e.LastTimestamp.Time, e.EventTime.Time} {
		if at.After(t) {
			t = at
		}
	}
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	return t
}

// shorten cuts s to n characters.
func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
