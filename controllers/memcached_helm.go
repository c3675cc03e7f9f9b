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
	"fmt"
	"time"

	"github.com/operator-framework/helm-operator-plugins/pkg/annotation"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"github.com/operator-framework/helm-operator-plugins/pkg/reconciler"
	"github.com/operator-framework/helm-operator-plugins/pkg/values"
	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	"helm.sh/helm/v3/pkg/chartutil"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/memcached-operator/internal/actionclient"
	"github.com/example/memcached-operator/internal/operand"
)

// The Helm API reconciles what the chart renders; the operator's role must cover every kind of it
// (a test renders the chart and checks this role).
// +kubebuilder:rbac:groups=cache.my.domain,resources=memcacheds,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cache.my.domain,resources=memcacheds/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cache.my.domain,resources=memcacheds/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;serviceaccounts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get;list;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=servicemonitors,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// HelmOptions are the operator-wide settings of the Helm reconcilers. A watch in watches.yaml may
// set its own reconcilePeriod and maxConcurrentReconciles, which win over these.
type HelmOptions struct {
	// ReconcilePeriod re-renders and re-checks each release this often (drift repair).
	ReconcilePeriod time.Duration
	// MaxConcurrentReconciles is the number of workers per watched kind.
	MaxConcurrentReconciles int
	// MaxReleaseHistory is the number of release revisions kept per CR.
	MaxReleaseHistory int
}

// setupHelmReconciler builds the reconciler of one watch with the options of the Operator SDK
// hybrid tutorial (override values, reconcile period, concurrency, install/upgrade/uninstall
// annotations, dependent watches) plus this operator's values translation, and registers it with
// the manager (see setupHelmController).
func setupHelmReconciler(mgr ctrl.Manager, w watches.Watch, opts HelmOptions, operatorNamespace string, direct client.Client) error {
	img, overridden, err := operand.DefaultImage(w.Chart)
	if err != nil {
		return err
	}
	var defaultImage *operand.Image
	if overridden {
		defaultImage = &img // else the chart's values.yaml already holds it
	}

	period := opts.ReconcilePeriod
	if w.ReconcilePeriod != nil {
		period = w.ReconcilePeriod.Duration
	}
	workers := opts.MaxConcurrentReconciles
	if w.MaxConcurrentReconciles != nil {
		workers = *w.MaxConcurrentReconciles
	}

	// Release records are read from the manager's cache (see actionclient.ReleaseStore).
	store := actionclient.NewReleaseStore(mgr.GetClient())
	configs, err := helmclient.NewActionConfigGetter(mgr.GetConfig(), mgr.GetRESTMapper(), helmclient.StorageDriverMapper(store.DriverFor))
	if err != nil {
		return fmt.Errorf("helm action configuration: %w", err)
	}

	recorder := mgr.GetEventRecorder(helmControllerName(w.GroupVersionKind))
	ropts := []reconciler.Option{
		reconciler.WithClient(sharedStatusClient{Client: mgr.GetClient(), live: mgr.GetAPIReader()}),
		// No rollback on a failed upgrade: the library's forced rollback recreates objects whose
		// immutable fields changed, and a rollback of an upgrade that keeps failing loops. The
		// wrapper backs off instead and keeps the failed release for inspection.
		// Live reads: upgrades read the ReplicaSets they replace, which nothing else watches.
		reconciler.WithActionClientGetter(actionclient.NewGetter(configs, actionclient.Clients{Live: direct, Cached: mgr.GetClient()}, recorder, helmclient.WithFailureRollbacks(false))),
		reconciler.WithEventRecorder(libraryEvents{recorder}),
		reconciler.WithChart(*w.Chart),
		reconciler.WithGroupVersionKind(w.GroupVersionKind),
		reconciler.WithOverrideValues(w.OverrideValues),
		reconciler.WithValueTranslator(ValuesTranslator(OperatorValues{Image: defaultImage, Namespace: operatorNamespace}, recorder)),
		// The library sets its (identity) value mapper only in its SetupWithManager, which
		// setupHelmController replaces; without a mapper every reconcile panics. The option is
		// deprecated without a replacement that sets it (upstream home: default it in New).
		//lint:ignore SA1019 the library gives no other way to set the mapper outside SetupWithManager
		reconciler.WithValueMapper(values.MapperFunc(func(v chartutil.Values) chartutil.Values { return v })),
		reconciler.WithReconcilePeriod(period),
		reconciler.WithMaxReleaseHistory(opts.MaxReleaseHistory),
		reconciler.WithWaitForDeletionTimeout(waitForDeletionTimeout),
		reconciler.WithInstallAnnotations(annotation.DefaultInstallAnnotations...),
		reconciler.WithUpgradeAnnotations(annotation.DefaultUpgradeAnnotations...),
		reconciler.WithUninstallAnnotations(annotation.DefaultUninstallAnnotations...),
		reconciler.WithLog(ctrl.Log.WithName("controllers").WithName(w.Kind)),
	}
	// The library's SetupWithManager is not used (see setupHelmController): the workers, the
	// selector and the dependent watches are set up there, not with the library's options.
	var dependents *dependentWatches
	if w.WatchDependentResources == nil || *w.WatchDependentResources {
		dependents = &dependentWatches{}
		ropts = append(ropts, reconciler.WithPostHook(dependents))
	}
	r, err := reconciler.New(ropts...)
	if err != nil {
		return fmt.Errorf("build Helm reconciler for %s: %w", w.GroupVersionKind, err)
	}
	if err := setupHelmController(mgr, r, w.GroupVersionKind, workers, w.Selector, dependents); err != nil {
		return fmt.Errorf("set up Helm reconciler for %s: %w", w.GroupVersionKind, err)
	}
	return nil
}

// waitForDeletionTimeout is how long an uninstall waits for the CR to be gone (the library's
// default, which its own set-up would apply).
const waitForDeletionTimeout = 30 * time.Second
