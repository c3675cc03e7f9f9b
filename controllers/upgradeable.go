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

package controllers

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/operator-framework/operator-lib/conditions"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
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
)

// Reasons of the OperatorCondition Upgradeable.
const (
	ReasonAsExpected        = "AsExpected"
	ReasonOperandRollingOut = "OperandRollingOut"
	ReasonOperandFailed     = "OperandFailed"

	labelPartOf = "app.kubernetes.io/part-of"
	partOf      = "memcached-operator"
)

// +kubebuilder:rbac:groups=operators.coreos.com,resources=operatorconditions,verbs=get;list;watch;update;patch

// UpgradeableReconciler tells OLM, through the OperatorCondition it made for this operator,
// whether an operator upgrade may start now: not while a memcached Deployment rolls out, and not
// while an operand has failed, so that an upgrade never stacks on an unfinished change.
type UpgradeableReconciler struct {
	client.Client
	// Condition is operator-lib's Upgradeable condition of the OperatorCondition OLM named.
	Condition conditions.Condition
}

// upgradeableKey is the single work item: every event recomputes the one condition.
var upgradeableKey = ctrl.Request{NamespacedName: types.NamespacedName{Name: "upgradeable"}}

// Reconcile computes Upgradeable from the operands and writes it only when it changed.
func (r *UpgradeableReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	status, reason, message, err := r.compute(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if current, err := r.Condition.Get(ctx); err == nil &&
		current.Status == status && current.Reason == reason && current.Message == message {
		return ctrl.Result{}, nil
	}
	if err := r.Condition.Set(ctx, status, conditions.WithReason(reason), conditions.WithMessage(message)); err != nil {
		return ctrl.Result{}, fmt.Errorf("set OperatorCondition Upgradeable=%s: %w", status, err)
	}
	logf.FromContext(ctx).Info("OperatorCondition Upgradeable", "status", status, "reason", reason, "message", message)
	return ctrl.Result{}, nil
}

func (r *UpgradeableReconciler) compute(ctx context.Context) (metav1.ConditionStatus, string, string, error) {
	var failed, rolling []string

	memcacheds := &cachev1.MemcachedList{}
	if err := r.List(ctx, memcacheds); err != nil {
		return "", "", "", err
	}
	for _, mc := range memcacheds.Items {
		for _, c := range mc.Status.Conditions {
			if (c.Type == "ReleaseFailed" || c.Type == "Irreconcilable") && c.Status == metav1.ConditionTrue {
				failed = append(failed, fmt.Sprintf("Memcached %s/%s: %s", mc.Namespace, mc.Name, c.Message))
			}
			if c.Type == ConditionProgressing && c.Status == metav1.ConditionTrue {
				rolling = append(rolling, fmt.Sprintf("Memcached %s/%s: %s", mc.Namespace, mc.Name, c.Message))
			}
		}
	}
	backups := &cachev1.MemcachedBackupList{}
	if err := r.List(ctx, backups); err != nil {
		return "", "", "", err
	}
	for _, b := range backups.Items {
		if c := meta.FindStatusCondition(b.Status.Conditions, cachev1.ConditionDegraded); c != nil && c.Status == metav1.ConditionTrue {
			failed = append(failed, fmt.Sprintf("MemcachedBackup %s/%s: %s", b.Namespace, b.Name, c.Message))
		}
	}
	deployments := &appsv1.DeploymentList{}
	if err := r.List(ctx, deployments, client.MatchingLabels{labelPartOf: partOf}); err != nil {
		return "", "", "", err
	}
	for _, d := range deployments.Items {
		if msg := rollingOut(&d); msg != "" {
			rolling = append(rolling, fmt.Sprintf("Deployment %s/%s %s", d.Namespace, d.Name, msg))
		}
	}

	switch {
	case len(failed) > 0:
		return metav1.ConditionFalse, ReasonOperandFailed, summary(failed), nil
	case len(rolling) > 0:
		return metav1.ConditionFalse, ReasonOperandRollingOut, summary(rolling), nil
	}
	return metav1.ConditionTrue, ReasonAsExpected, "no memcached operand is rolling out or failed", nil
}

// rollingOut says how a Deployment is not yet at its spec, or "" when it is.
func rollingOut(d *appsv1.Deployment) string {
	if ro := rolloutOf(d); !ro.complete() {
		return ro.String()
	}
	return ""
}

func summary(items []string) string {
	sort.Strings(items)
	if len(items) > 3 {
		items = append(items[:3], fmt.Sprintf("and %d more", len(items)-3))
	}
	return strings.Join(items, "; ")
}

// SetupWithManager recomputes the condition on any change of an operand or its Deployments.
func (r *UpgradeableReconciler) SetupWithManager(mgr ctrl.Manager) error {
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []ctrl.Request {
		return []ctrl.Request{upgradeableKey}
	})
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[labelPartOf] == partOf })
	// One event at start: with no operand at all, nothing else would compute the condition.
	start := make(chan event.GenericEvent, 1)
	start <- event.GenericEvent{Object: &cachev1.Memcached{}}
	return ctrl.NewControllerManagedBy(mgr).
		Named("upgradeable").
		WatchesRawSource(source.Channel(start, all)).
		Watches(&cachev1.Memcached{}, all).
		Watches(&cachev1.MemcachedBackup{}, all).
		Watches(&appsv1.Deployment{}, all, builder.WithPredicates(ours)).
		Complete(r)
}
