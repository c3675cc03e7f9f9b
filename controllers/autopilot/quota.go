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

package autopilot

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/serverset"
	"github.com/example/memcached-operator/internal/rollout"
)

// Whether the namespace's ResourceQuota admits the autopilot's next step (see
// reconciler.go).

// quotaRefusal says which ResourceQuota of the Memcached's namespace the step from ap to next
// would exceed, or "": the pods the StatefulSet's template makes, with the memory change applied
// to the memcached container.
func (r *Reconciler) quotaRefusal(ctx context.Context, mc *cachev1.Memcached, ap *cachev1.AutopilotStatus, next cachev1.AutopilotStatus) (string, error) {
	quotas := &corev1.ResourceQuotaList{}
	if err := r.List(ctx, quotas, client.InNamespace(mc.Namespace)); err != nil {
		return "", fmt.Errorf("list the ResourceQuotas of namespace %s: %w", mc.Namespace, err)
	}
	if len(quotas.Items) == 0 {
		return "", nil
	}
	servers, err := serverset.Of(ctx, r.Client, mc)
	if err != nil || servers == nil {
		return "", err
	}
	pod := servers.Spec.Template.Spec
	perPod := podAmounts(&pod)
	need := corev1.ResourceList{}
	if next.Replicas > ap.Replicas {
		addAmounts(need, perPod, int64(next.Replicas-ap.Replicas))
		need[corev1.ResourcePods] = *resource.NewQuantity(int64(next.Replicas-ap.Replicas), resource.DecimalSI)
	}
	if delta := int64(next.MaxMemoryMB-ap.MaxMemoryMB) << 20; delta > 0 {
		c := rollout.MemcachedContainer(&pod)
		for _, kind := range []struct {
			name corev1.ResourceName
			list corev1.ResourceList
		}{{corev1.ResourceRequestsMemory, c.Resources.Requests}, {corev1.ResourceLimitsMemory, c.Resources.Limits}} {
			if _, ok := kind.list[corev1.ResourceMemory]; ok {
				addAmounts(need, corev1.ResourceList{kind.name: *resource.NewQuantity(delta, resource.BinarySI)}, int64(next.Replicas))
			}
		}
	}
	need[corev1.ResourceMemory] = need[corev1.ResourceRequestsMemory]
	need[corev1.ResourceCPU] = need[corev1.ResourceRequestsCPU]
	need[corev1.ResourceName("count/pods")] = need[corev1.ResourcePods]
	for _, q := range quotas.Items {
		if !quotaCovers(&q, &pod) {
			continue
		}
		for name, hard := range q.Status.Hard {
			more, ok := need[name]
			if !ok || more.IsZero() {
				continue
			}
			used := q.Status.Used[name]
			total := used.DeepCopy()
			total.Add(more)
			if total.Cmp(hard) > 0 {
				return fmt.Sprintf("ResourceQuota %s allows %s %s, %s is used, and the step needs %s more", q.Name, name, hard.String(), used.String(), more.String()), nil
			}
		}
	}
	return "", nil
}

// podAmounts are what one pod of spec counts against a quota: its containers' requests and
// limits, as requests.* and limits.*.
func podAmounts(spec *corev1.PodSpec) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range spec.Containers {
		for name, q := range c.Resources.Requests {
			addAmounts(out, corev1.ResourceList{corev1.ResourceName("requests." + string(name)): q}, 1)
		}
		for name, q := range c.Resources.Limits {
			addAmounts(out, corev1.ResourceList{corev1.ResourceName("limits." + string(name)): q}, 1)
		}
	}
	return out
}

// addAmounts adds n times each amount of more to into.
func addAmounts(into, more corev1.ResourceList, n int64) {
	for name, q := range more {
		sum := into[name]
		for range n {
			sum.Add(q)
		}
		into[name] = sum
	}
}

// quotaCovers reports whether a ResourceQuota counts the memcached pods of spec: its scopes are
// those of long-running pods with requests (NotTerminating, NotBestEffort) and of their priority
// class; a scope the operator does not know counts them, to be safe.
func quotaCovers(q *corev1.ResourceQuota, spec *corev1.PodSpec) bool {
	matches := func(scope corev1.ResourceQuotaScope, op corev1.ScopeSelectorOperator, values []string) bool {
		switch scope {
		case corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
			return false
		case corev1.ResourceQuotaScopePriorityClass:
			var sop selection.Operator
			switch op {
			case corev1.ScopeSelectorOpIn:
				sop = selection.In
			case corev1.ScopeSelectorOpNotIn:
				sop = selection.NotIn
			case corev1.ScopeSelectorOpExists:
				sop = selection.Exists
			case corev1.ScopeSelectorOpDoesNotExist:
				sop = selection.DoesNotExist
			default:
				return true
			}
			req, err := k8slabels.NewRequirement("priorityClass", sop, values)
			if err != nil {
				return true
			}
			set := k8slabels.Set{}
			if spec.PriorityClassName != "" {
				set["priorityClass"] = spec.PriorityClassName
			}
			return req.Matches(set)
		}
		return true
	}
	for _, s := range q.Spec.Scopes {
		if !matches(s, corev1.ScopeSelectorOpExists, nil) {
			return false
		}
	}
	if q.Spec.ScopeSelector != nil {
		for _, e := range q.Spec.ScopeSelector.MatchExpressions {
			if !matches(e.ScopeName, e.Operator, e.Values) {
				return false
			}
		}
	}
	return true
}
