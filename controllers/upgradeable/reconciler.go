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

// Package upgradeable is the controller of OLM's OperatorCondition Upgradeable: it holds operator
// upgrades back while the operator's own work in flight would be disturbed.
package upgradeable

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/operator-framework/operator-lib/conditions"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/managercache"
	"github.com/example/memcached-operator/controllers/internal/progress"
	"github.com/example/memcached-operator/internal/labels"
)

// Reasons of the OperatorCondition Upgradeable.
const (
	ReasonAsExpected     = "AsExpected"
	ReasonWorkInProgress = "OperatorWorkInProgress"
)

// DefaultMaxUpgradeHold is how long one piece of the operator's work may hold operator upgrades
// back: Kubernetes' default progress deadline of a Deployment.
const DefaultMaxUpgradeHold = 10 * time.Minute

// +kubebuilder:rbac:groups=operators.coreos.com,resources=operatorconditions,verbs=get;list;watch;update;patch

// Reconciler tells OLM, through the OperatorCondition it made for this operator,
// whether an operator upgrade may start now. It holds upgrades back only while work the operator
// itself has in flight would be disturbed:
//   - a rollout of a Deployment the operator made (a Memcached's or a MemcachedBackup's), until it
//     completes or fails (its progress deadline);
//   - pods of an earlier release that the operator retires after a selector migration;
//
// and for at most MaxHold in a row: after that the condition is True until no work is in flight
// any more, so no stream of new work (tenants keep creating CRs) holds upgrades back for long.
// A tenant's failure (a failed release, a degraded backup, a rollout past its deadline) stays on
// that tenant's CR: it never holds back an operator upgrade, which may well bring its fix.
type Reconciler struct {
	client.Client
	// Condition is operator-lib's Upgradeable condition of the OperatorCondition OLM named.
	Condition conditions.Condition
	// MaxHold bounds how long upgrades are held back in a row (DefaultMaxUpgradeHold if 0).
	MaxHold time.Duration
	// Now is the clock (time.Now if nil).
	Now func() time.Time

	mu sync.Mutex
	// holdingSince is when work in flight began to hold upgrades back; zero when none is in flight.
	holdingSince time.Time
}

// upgradeableKey is the single work item: every event recomputes the one condition.
var upgradeableKey = ctrl.Request{NamespacedName: types.NamespacedName{Name: "upgradeable"}}

// Reconcile computes Upgradeable from the operator's work in flight and writes it only when it
// changed; it looks again when the oldest piece of work reaches its time bound.
func (r *Reconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	status, reason, message, recheck, err := r.compute(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	result := ctrl.Result{RequeueAfter: recheck}
	if current, err := r.Condition.Get(ctx); err == nil &&
		current.Status == status && current.Reason == reason && current.Message == message {
		return result, nil
	}
	if err := r.Condition.Set(ctx, status, conditions.WithReason(reason), conditions.WithMessage(message)); err != nil {
		return ctrl.Result{}, fmt.Errorf("set OperatorCondition Upgradeable=%s: %w", status, err)
	}
	logf.FromContext(ctx).Info("OperatorCondition Upgradeable", "status", status, "reason", reason, "message", message)
	return result, nil
}

func (r *Reconciler) compute(ctx context.Context) (metav1.ConditionStatus, string, string, time.Duration, error) {
	var inFlight []string
	deployments := &appsv1.DeploymentList{}
	if err := r.List(ctx, deployments); err != nil {
		return "", "", "", 0, err
	}
	for i := range deployments.Items {
		d := &deployments.Items[i]
		if ro := progress.OfDeployment(d); madeByOperator(d) && !ro.Complete() && ro.Failure == "" {
			inFlight = append(inFlight, fmt.Sprintf("Deployment %s/%s %s", d.Namespace, d.Name, ro))
		}
	}
	memcacheds := &cachev1.MemcachedList{}
	if err := r.List(ctx, memcacheds); err != nil {
		return "", "", "", 0, err
	}
	failing := map[types.NamespacedName]bool{} // Memcacheds whose pods cannot start or keep running
	for _, mc := range memcacheds.Items {
		for _, c := range mc.Status.Conditions {
			if c.Type == cachev1.ConditionProgressing && c.Status == metav1.ConditionTrue && c.Reason == cachev1.ReasonRetiringPods {
				inFlight = append(inFlight, fmt.Sprintf("Memcached %s/%s: %s", mc.Namespace, mc.Name, c.Message))
			}
			if c.Type == cachev1.ConditionProgressing && c.Reason == cachev1.ReasonPodsFailing {
				failing[types.NamespacedName{Namespace: mc.Namespace, Name: mc.Name}] = true
			}
		}
	}
	statefulSets := &appsv1.StatefulSetList{}
	if err := r.List(ctx, statefulSets); err != nil {
		return "", "", "", 0, err
	}
	for i := range statefulSets.Items {
		s := &statefulSets.Items[i]
		// A StatefulSet has no progress deadline: a rollout whose pods fail (the tenant's CR says
		// so) would hold every upgrade back until MaxHold, as a failed Deployment rollout does not.
		if failing[types.NamespacedName{Namespace: s.Namespace, Name: s.Labels[labels.Instance]}] {
			continue
		}
		if ro := progress.OfStatefulSet(s); madeByOperator(s) && !ro.Complete() {
			inFlight = append(inFlight, fmt.Sprintf("StatefulSet %s/%s %s", s.Namespace, s.Name, ro))
		}
	}

	now, maxHold := time.Now(), r.MaxHold
	if r.Now != nil {
		now = r.Now()
	}
	if maxHold == 0 {
		maxHold = DefaultMaxUpgradeHold
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(inFlight) == 0 {
		r.holdingSince = time.Time{}
		return metav1.ConditionTrue, ReasonAsExpected, "no rollout or migration of the operator is in flight", 0, nil
	}
	if r.holdingSince.IsZero() {
		r.holdingSince = now
	}
	if left := maxHold - now.Sub(r.holdingSince); left > 0 {
		return metav1.ConditionFalse, ReasonWorkInProgress, summary(inFlight), left, nil
	}
	return metav1.ConditionTrue, ReasonAsExpected, fmt.Sprintf("work of the operator has been in flight for over %s, which no longer holds upgrades back: %s",
		maxHold, summary(inFlight)), 0, nil
}

// madeByOperator: the Deployment or StatefulSet is a Memcached's (its release's) or a
// MemcachedBackup's; one that only carries the operator's labels is someone else's.
func madeByOperator(d client.Object) bool {
	ref := metav1.GetControllerOf(d)
	return ref != nil && (ref.Kind == "Memcached" || ref.Kind == "MemcachedBackup") &&
		strings.HasPrefix(ref.APIVersion, cachev1.GroupVersion.Group+"/")
}

func summary(items []string) string {
	sort.Strings(items)
	if len(items) > 3 {
		items = append(items[:3], fmt.Sprintf("and %d more", len(items)-3))
	}
	return strings.Join(items, "; ")
}

// SetupWithManager recomputes the condition on any change of a Memcached or of a Deployment or
// StatefulSet the operator made.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []ctrl.Request {
		return []ctrl.Request{upgradeableKey}
	})
	ours := predicate.NewPredicateFuncs(madeByOperator)
	// One event at start: with no operand at all, nothing else would compute the condition.
	start := make(chan event.GenericEvent, 1)
	start <- event.GenericEvent{Object: &cachev1.Memcached{}}
	return ctrl.NewControllerManagedBy(mgr).
		Named("upgradeable").
		WatchesRawSource(source.Channel(start, all)).
		Watches(managercache.MemcachedObject(), all).
		Watches(&appsv1.Deployment{}, all, builder.WithPredicates(ours)).
		Watches(&appsv1.StatefulSet{}, all, builder.WithPredicates(ours)).
		Complete(r)
}
