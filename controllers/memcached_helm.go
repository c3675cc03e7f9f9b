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

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/memcached-operator/controllers/internal/managercache"
	"github.com/example/memcached-operator/controllers/values"
	"github.com/example/memcached-operator/internal/helm"
	"github.com/example/memcached-operator/internal/helm/library"
)

// The Helm API reconciles what the chart renders; the operator's role must cover every kind of it
// (a test renders the chart and checks this role).
// +kubebuilder:rbac:groups=cache.my.domain,resources=memcacheds,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cache.my.domain,resources=memcacheds/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cache.my.domain,resources=memcacheds/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;serviceaccounts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get;list;delete
// Claims of a StatefulSet's own making that persistence turned off drops (actionclient's replace.go).
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=list;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=servicemonitors;prometheusrules,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// setupMemcachedHelm sets up the Helm side of Memcached (internal/helm) with this operator's
// values translation: its image for CRs that name none (nil: the chart's own) and its namespace,
// the Go side's first report, and the preparation of an
// upgrade whose memory change is made in place.
func setupMemcachedHelm(ctx context.Context, mgr ctrl.Manager, w helm.Watch, cfg Config, defaults values.Operator, live client.Client, firstReport helm.FirstReport, beforeUpgrade helm.BeforeUpgrade) error {
	recorder := mgr.GetEventRecorder(library.ControllerName(w.GroupVersionKind))
	return helm.Setup(ctx, mgr, w, helm.Options{
		Translator:        values.Translator(defaults, recorder),
		Settings:          cfg.Helm,
		Namespaces:        cfg.WatchNamespaces,
		Live:              live,
		MayRecoverPending: cfg.MayRecoverPending,
		PartlyCached:      managercache.PartlyCachedKinds(),
		FirstReport:       firstReport,
		Records:           cfg.Records,
		SealNamespace:     sealNamespace(cfg.Namespace),
		RetiredKinds:      RetiredChartKinds,
		BeforeUpgrade:     beforeUpgrade,
		// The autopilot's choice is rendered in place of the spec's size (values.Translator).
		StatusInputs: []string{"autopilot.replicas", "autopilot.maxMemoryMB"},
	})
}

// sealNamespace is where the keys that seal the release records live: the operator's namespace.
// Outside a cluster (make run) there is none; the keys go to "default", which must then be a
// namespace no tenant can read Secrets in.
func sealNamespace(operatorNamespace string) string {
	if operatorNamespace != "" {
		return operatorNamespace
	}
	ctrl.Log.WithName("setup").Info("not running in a cluster: the keys that seal Helm's release records are kept in namespace default; whoever can read Secrets there can forge records")
	return "default"
}

// RetiredChartKinds are the kinds earlier versions of the memcached chart rendered and this one
// does not: charts before 1.2.0 ran memcached as a Deployment, which an upgrade deletes.
var RetiredChartKinds = []schema.GroupKind{{Group: appsv1.GroupName, Kind: "Deployment"}}
