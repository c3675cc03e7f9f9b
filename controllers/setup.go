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
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apiv2 "github.com/operator-framework/api/pkg/operators/v2"
	"github.com/operator-framework/operator-lib/conditions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/autopilot"
	"github.com/example/memcached-operator/controllers/backup"
	"github.com/example/memcached-operator/controllers/internal/managercache"
	"github.com/example/memcached-operator/controllers/internal/metrics"
	"github.com/example/memcached-operator/controllers/internal/serverset"
	"github.com/example/memcached-operator/controllers/internal/servertalk"
	"github.com/example/memcached-operator/controllers/servers"
	"github.com/example/memcached-operator/controllers/servertls"
	"github.com/example/memcached-operator/controllers/stats"
	"github.com/example/memcached-operator/controllers/upgradeable"
	"github.com/example/memcached-operator/controllers/values"
	"github.com/example/memcached-operator/internal/helm"
	"github.com/example/memcached-operator/internal/operand"
	"github.com/example/memcached-operator/internal/tlsprofile"
)

// Config is what the operator's controllers need from the command line and environment.
type Config struct {
	// WatchesFile lists the Helm-driven kinds and their charts (watches.yaml).
	WatchesFile string
	// WatchNamespaces are the namespaces the operator watches; empty: all (WatchNamespaces).
	WatchNamespaces []string
	// Namespace is the operator's own (POD_NAMESPACE); "" outside a cluster.
	Namespace string
	// RelatedImage is the memcached image of CRs that name none (RELATED_IMAGE_MEMCACHED, which
	// OLM lists in relatedImages and a mirror may replace); "": the chart's pinned image.
	RelatedImage string
	// RelatedExporterImage is the same for the exporter (RELATED_IMAGE_MEMCACHED_EXPORTER).
	RelatedExporterImage string
	Helm                 helm.Settings
	// RetireDelay: see servers.DefaultRetireDelay (0: that).
	RetireDelay time.Duration
	// StatsInterval is how often the stats of each Memcached's ready pods are read (0: never).
	StatsInterval time.Duration
	// StatsPort is memcached's port in the pods (0: the chart's, 11211); tests serve several
	// memcacheds on one machine.
	StatsPort int32
	// CAValidity and CertificateValidity are how long the certificates the operator makes for a
	// cache that serves TLS are valid (0: DefaultCAValidity, DefaultCertificateValidity); each
	// is renewed with a third of its life left.
	CAValidity, CertificateValidity time.Duration
	// CertificateSecretCheck is how often a certificate Secret that a Memcached names
	// (spec.tls.certificateSecret) is read again (0: DefaultCertificateSecretCheck).
	CertificateSecretCheck time.Duration
	// TLSCASpread is how long clients are given both CAs while a user's certificate Secret changes
	// its CA (0: DefaultCASpread).
	TLSCASpread time.Duration
	// TLSProfile is the TLS security profile the operator follows (the metrics server's): memcached
	// takes it when it serves TLS. nil: Intermediate.
	TLSProfile *tlsprofile.Server
	// Live is the operator's one uncached client, for what the manager's cache does not hold
	// (main shares it with the leader lock); nil: Setup makes one.
	Live client.Client
	// Records is the memo of decoded release records that CacheOptions was given (nil: none, the
	// cache keeps the records' data).
	Records *helm.Records
	// MayRecoverPending says whether a release left pending by an interrupted operation may be
	// recovered now (leader.Lease.MayRecover); nil: always, as the single instance.
	MayRecoverPending func(context.Context) error
}

// WatchNamespaces splits a comma-separated list of namespaces (WATCH_NAMESPACE, which OLM sets
// from the OperatorGroup); empty means all.
func WatchNamespaces(list string) []string {
	var out []string
	for _, ns := range strings.Split(list, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}

// Setup registers every controller of the operator with the manager: the Helm side of the
// Memcached API (its one entry in the watches file), its Go side (spec migration, the servers'
// changes and status, memcached's own stats, the autopilot, TLS),
// and the MemcachedBackup controller, whose pods use the Memcached chart's image policy.
func Setup(ctx context.Context, mgr ctrl.Manager, cfg Config) error {
	if !managercache.HoldsMemcachedsOnce(mgr.GetCache()) {
		return errors.New("the manager's cache must be made by controllers.NewCache (ctrl.Options.NewCache): it holds each Memcached once")
	}
	memcachedWatch, err := loadMemcachedWatch(cfg.WatchesFile)
	if err != nil {
		return err
	}
	direct := cfg.Live
	if direct == nil {
		var err error
		if direct, err = client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()}); err != nil {
			return err
		}
	}
	reportMissingNamespaces(ctx, direct, cfg.WatchNamespaces)
	img, overridden, err := operand.DefaultImage(helm.ChartValues(memcachedWatch.Chart), cfg.RelatedImage)
	if err != nil {
		return err
	}
	exporterImg, exporterOverridden, err := operand.DefaultExporterImage(helm.ChartValues(memcachedWatch.Chart), cfg.RelatedExporterImage)
	if err != nil {
		return err
	}
	defaults := values.Operator{Namespace: cfg.Namespace, TLSProfile: cfg.TLSProfile}
	if overridden {
		defaults.Image = &img // else the chart's values.yaml already holds it
	}
	if exporterOverridden {
		defaults.ExporterImage = &exporterImg
	}
	retire := cfg.RetireDelay
	if retire == 0 {
		retire = servers.DefaultRetireDelay
	}
	if cfg.Records == nil {
		cfg.Records = helm.NewRecords() // the cache keeps the records' data; both sides share the memo
	}
	dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("discovery client: %w", err)
	}
	tlsSecrets, err := servertls.SecretsCache(mgr, cfg.WatchNamespaces)
	if err != nil {
		return fmt.Errorf("the cache of TLS Secrets: %w", err)
	}
	reach := &servertalk.Reach{Port: cfg.StatsPort, Secrets: tlsSecrets}
	operands := &servers.Reconciler{Client: mgr.GetClient(), Live: direct, Recorder: mgr.GetEventRecorder("memcached-operand-controller"),
		RetireDelay: retire, Records: cfg.Records, Support: servers.NewResizeSupport(dc), Reach: reach}
	if err := setupMemcachedHelm(ctx, mgr, *memcachedWatch, cfg, defaults, direct, operands.FirstReport, operands.BeforeUpgrade); err != nil {
		return err
	}
	platform, err := operand.DetectPlatform(ctx, dc)
	if err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("operand settings", "memcachedImage", img.String(), "exporterImage", exporterImg.String(), "openShift", platform.OpenShift)

	if err := serverset.IndexByInstance(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := operands.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the Memcached operand controller: %w", err)
	}

	sizer := &autopilot.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("memcached-autopilot-controller"), Reach: reach,
		StatsInterval: cfg.StatsInterval}
	if err := sizer.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the Memcached autopilot: %w", err)
	}

	tlsCerts := &servertls.Reconciler{Client: mgr.GetClient(), Secrets: tlsSecrets, Live: direct, Recorder: mgr.GetEventRecorder("memcached-tls-controller"),
		Reach: reach, Workers: cfg.Helm.Workers, CAValidity: cmp.Or(cfg.CAValidity, servertls.DefaultCAValidity), CertValidity: cmp.Or(cfg.CertificateValidity, servertls.DefaultCertificateValidity),
		CertificateSecretCheck: cfg.CertificateSecretCheck, CASpread: cfg.TLSCASpread}
	if err := tlsCerts.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the Memcached TLS controller: %w", err)
	}

	if cfg.StatsInterval > 0 {
		reader := &stats.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("memcached-stats-controller"),
			Interval: cfg.StatsInterval, Workers: cfg.Helm.Workers, Reach: reach}
		if err := reader.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up the Memcached stats controller: %w", err)
		}
	}
	if err := metrics.RegisterReleases(mgr.GetClient()); err != nil {
		return fmt.Errorf("register the releases metric: %w", err)
	}

	backups := &backup.Reconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("memcachedbackup-controller"),
		Image:    img,
		Platform: platform,
	}
	if err := backups.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up MemcachedBackup controller: %w", err)
	}
	return setupUpgradeable(mgr, direct)
}

// reportMissingNamespaces says which watched namespaces do not exist yet: the operator watches
// them all the same and reconciles their CRs once they are created. Without the right to read
// namespaces (some install modes), it says nothing.
func reportMissingNamespaces(ctx context.Context, c client.Client, namespaces []string) {
	for _, ns := range namespaces {
		if err := c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); apierrors.IsNotFound(err) {
			ctrl.Log.WithName("setup").Info("a watched namespace does not exist yet: its CRs are reconciled once it is created", "namespace", ns)
		}
	}
}

// loadMemcachedWatch reads the watches file, whose one entry is the Memcached kind and its chart:
// the operator's only Helm-driven API, whose values translation and Go side are Memcached's.
func loadMemcachedWatch(file string) (*helm.Watch, error) {
	ws, err := helm.LoadWatches(file)
	if err != nil {
		return nil, fmt.Errorf("load watches file %s: %w", file, err)
	}
	memcached := cachev1.GroupVersion.WithKind("Memcached")
	if len(ws) != 1 || ws[0].GroupVersionKind != memcached {
		var kinds []string
		for _, w := range ws {
			kinds = append(kinds, w.GroupVersionKind.String())
		}
		return nil, fmt.Errorf("watches file %s lists %v: it must list %s alone, the operator's only Helm-driven kind", file, kinds, memcached)
	}
	return &ws[0], nil
}

// setupUpgradeable reports the OperatorCondition Upgradeable when OLM runs the operator (it sets
// OPERATOR_CONDITION_NAME); elsewhere there is nothing to report to, and it says so. The
// OperatorCondition lives in the operator's namespace, which need not be watched: it is read with
// direct, an uncached client.
func setupUpgradeable(mgr ctrl.Manager, direct client.Client) error {
	cond, err := conditions.InClusterFactory{Client: direct}.NewCondition(apiv2.ConditionType(apiv2.Upgradeable))
	if err != nil {
		ctrl.Log.WithName("setup").Info("not run by OLM: the OperatorCondition Upgradeable is not reported", "reason", err.Error())
		return nil
	}
	r := &upgradeable.Reconciler{Client: mgr.GetClient(), Condition: cond}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the Upgradeable controller: %w", err)
	}
	return nil
}

// The TLS defaults (Config's CAValidity, CertificateValidity, CertificateSecretCheck and
// TLSCASpread; main.go's flags).
const (
	DefaultCAValidity             = servertls.DefaultCAValidity
	DefaultCertificateValidity    = servertls.DefaultCertificateValidity
	DefaultCertificateSecretCheck = servertls.DefaultCertificateSecretCheck
	DefaultCASpread               = servertls.DefaultCASpread
)

// DefaultStatsInterval is how often the stats of a Memcached's ready pods are read (Config's
// StatsInterval, main.go's default).
const DefaultStatsInterval = stats.DefaultInterval

// CacheOptions are the manager's cache options (ctrl.Options.Cache): the watched namespaces
// (empty: all), release records as records keeps them (nil: with their data), and what the cache
// holds of each kind (managercache.Options). Config.Records must be the same records.
func CacheOptions(watchNamespaces []string, records *helm.Records) cache.Options {
	return managercache.Options(watchNamespaces, records)
}

// NewCache is the manager's cache (ctrl.Options.NewCache), which holds each Memcached once:
// Setup refuses a manager with another.
func NewCache(config *rest.Config, opts cache.Options) (cache.Cache, error) {
	return managercache.New(config, opts)
}

// ClientOptions make the manager's client read unstructured objects (the Helm-driven CRs) from
// the cache too, as it does typed ones; by default controller-runtime sends those reads to the
// API server.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{Unstructured: true}}
}
