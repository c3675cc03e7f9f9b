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

// Command manager runs the memcached-operator: the Helm reconcilers of watches.yaml and the Go
// controllers in one controller-runtime manager, led by one pod at a time (leader for life).
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	apiv2 "github.com/operator-framework/api/pkg/operators/v2"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers"
	"github.com/example/memcached-operator/internal/helm"
	"github.com/example/memcached-operator/internal/leader"
	"github.com/example/memcached-operator/internal/operand"
	"github.com/example/memcached-operator/internal/tlsprofile"
)

// watchNamespaceEnv holds the namespaces to watch, comma-separated; empty means all. OLM sets it
// from the OperatorGroup's olm.targetNamespaces.
const watchNamespaceEnv = "WATCH_NAMESPACE"

var setupLog = ctrl.Log.WithName("setup")

// options are the manager's command-line settings.
type options struct {
	metricsAddr, probeAddr, pprofAddr, lockName string
	tlsProfile                                  string
	secureMetrics, enableHTTP2, leaderElect     bool
	controllers                                 controllers.Config
}

func main() {
	var o options
	flag.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443", "Address of the metrics endpoint (HTTPS unless --metrics-secure=false). 0 disables it.")
	flag.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address of the health and readiness probes.")
	flag.StringVar(&o.pprofAddr, "pprof-bind-address", "0", "Address of Go's pprof endpoints (/debug/pprof), for profiling. 0 disables them.")
	flag.BoolVar(&o.secureMetrics, "metrics-secure", true, "Serve metrics over HTTPS with Kubernetes authentication and authorization.")
	flag.BoolVar(&o.enableHTTP2, "enable-http2", false, "Allow HTTP/2 for the metrics server (off: CVE-2023-44487, CVE-2023-39325).")
	flag.StringVar(&o.tlsProfile, "tls-profile", "Intermediate", "TLS security profile of the metrics server and of memcached's TLS (Old, Intermediate or Modern, as OpenShift defines them; memcached never below TLS 1.2). On OpenShift the cluster's (APIServer cluster, spec.tlsSecurityProfile) is followed instead.")
	flag.DurationVar(&o.controllers.CertificateValidity, "tls-certificate-validity", controllers.DefaultCertificateValidity, "How long the certificates the operator makes for a Memcached's TLS (spec.tls) are valid; each is renewed with a third of its life left.")
	flag.DurationVar(&o.controllers.CAValidity, "tls-ca-validity", controllers.DefaultCAValidity, "How long the certificate authority the operator makes for each Memcached's TLS is valid; it is renewed with its own key, with a third of its life left.")
	flag.DurationVar(&o.controllers.CertificateSecretCheck, "tls-certificate-secret-check", controllers.DefaultCertificateSecretCheck, "How often a certificate Secret a Memcached names (spec.tls.certificateSecret) is read again for a renewal or a new CA.")
	flag.DurationVar(&o.controllers.TLSCASpread, "tls-ca-spread", controllers.DefaultCASpread, "How long clients are given both CAs before the servers serve a certificate of a new CA (spec.tls.certificateSecret): at least how long the kubelet takes to bring a changed Secret into pods.")
	flag.BoolVar(&o.leaderElect, "leader-elect", true, "Become the leader (operator-lib leader for life) before reconciling. Skipped outside a cluster.")
	flag.StringVar(&o.lockName, "leader-election-id", "memcached-operator-lock", "Name of the leader lock ConfigMap in the operator's namespace.")
	flag.StringVar(&o.controllers.WatchesFile, "watches-file", "watches.yaml", "Path of the Helm watches file.")
	flag.DurationVar(&o.controllers.Helm.ReconcilePeriod, "reconcile-period", time.Minute, "How often each Helm release is re-checked for drift.")
	flag.IntVar(&o.controllers.Helm.Workers, "max-concurrent-reconciles", runtime.NumCPU(), "Workers per controller: each Helm-driven kind, the Go side of Memcached, MemcachedBackup.")
	flag.DurationVar(&o.controllers.StatsInterval, "operand-stats-interval", controllers.DefaultStatsInterval, "How often memcached's own stats are read from each ready pod into the Memcached's status and metrics. 0 turns the reads off.")
	flag.IntVar(&o.controllers.Helm.MaxHistory, "max-release-history", 10, "Helm release revisions kept per Memcached.")
	zapOpts := zap.Options{Development: false}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	o.controllers.WatchNamespaces = controllers.WatchNamespaces(os.Getenv(watchNamespaceEnv))
	o.controllers.Namespace = os.Getenv("POD_NAMESPACE")
	o.controllers.RelatedImage = os.Getenv(operand.RelatedImageEnv)
	o.controllers.RelatedExporterImage = os.Getenv(operand.ExporterRelatedImageEnv)
	o.controllers.Records = helm.NewRecords() // the cache keeps release records as metadata, their decoded form here
	setMemoryLimit()
	if err := run(ctrl.SetupSignalHandler(), o); err != nil {
		setupLog.Error(err, "operator stopped")
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := cachev1.AddToScheme(scheme); err != nil {
		return err
	}
	if err := apiv2.AddToScheme(scheme); err != nil { // OLM's OperatorCondition
		return err
	}
	if err := configv1.Install(scheme); err != nil { // OpenShift's APIServer config: its TLS profile
		return err
	}

	restCfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}

	metricsTLS, onOpenShift, err := metricsTLSProfile(ctx, restCfg, scheme, o.tlsProfile)
	if err != nil {
		return err
	}
	tlsOpts := []func(*tls.Config){metricsTLS.TLSOpt()}
	if !o.enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metricsOpts := metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.secureMetrics, TLSOpts: tlsOpts}
	if o.secureMetrics {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}

	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsOpts,
		HealthProbeBindAddress: o.probeAddr,
		PprofBindAddress:       o.pprofAddr,
		Cache:                  controllers.CacheOptions(o.controllers.WatchNamespaces, o.controllers.Records),
		NewCache:               controllers.NewCache,
		Client:                 controllers.ClientOptions(),
		// The Go side of Memcached writes the status of as many CRs as the Helm side installs.
		Controller: config.Controller{MaxConcurrentReconciles: o.controllers.Helm.Workers},
		// Leader for life (operator-lib) is used instead of controller-runtime's lease election.
		LeaderElection: false,
		// A process that lost the leader lock must end before the new leader recovers what it
		// left pending (internal/leader).
		GracefulShutdownTimeout: ptr.To(leader.ShutdownTimeout),
	})
	if err != nil {
		return err
	}
	// The one uncached client: the leader lock, and what the manager's cache does not hold.
	direct, err := client.New(restCfg, client.Options{Scheme: scheme, Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return err
	}
	o.controllers.Live = direct
	if onOpenShift {
		// Every replica serves metrics, leader or not: each follows the cluster's profile.
		if err := (&tlsprofile.Watcher{Client: mgr.GetClient(), Server: metricsTLS}).SetupWithManager(mgr); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}

	// Start the manager first, so that probes and metrics answer while this pod waits to lead;
	// controllers added after the start begin at once.
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()

	if o.leaderElect {
		lease, err := becomeLeader(ctx, direct, o.lockName)
		if err != nil {
			if ctx.Err() != nil { // stopped while waiting: shut down quietly
				return <-done
			}
			return err
		}
		if lease != nil {
			// The process ends when another pod holds the lock (internal/leader).
			if err := mgr.Add(lease); err != nil {
				return err
			}
			o.controllers.MayRecoverPending = lease.MayRecover
		}
	}
	o.controllers.TLSProfile = metricsTLS
	if err := controllers.Setup(ctx, mgr, o.controllers); err != nil {
		return err
	}
	setupLog.Info("reconciling", "watchNamespaces", o.controllers.WatchNamespaces)
	return <-done
}

// metricsTLSProfile is the TLS profile of the metrics server: on OpenShift (it serves the APIServer
// config) the cluster's, which the operator then follows (tlsprofile.Initial); elsewhere the
// flag's.
func metricsTLSProfile(ctx context.Context, restCfg *rest.Config, scheme *k8sruntime.Scheme, flagProfile string) (*tlsprofile.Server, bool, error) {
	fallback, err := tlsprofile.Named(flagProfile)
	if err != nil {
		return nil, false, fmt.Errorf("--tls-profile: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(restCfg)
	if err != nil {
		return nil, false, err
	}
	onOpenShift, err := tlsprofile.OnOpenShift(dc)
	if err != nil {
		return nil, false, err
	}
	if !onOpenShift {
		setupLog.Info("metrics TLS profile", "profile", fallback.Profile, "minVersion", tls.VersionName(fallback.MinVersion))
		return tlsprofile.NewServer(fallback), false, nil
	}
	c, err := client.New(restCfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, false, err
	}
	settings, follow, err := tlsprofile.Initial(log.IntoContext(ctx, setupLog), c, fallback)
	if err != nil {
		return nil, false, err
	}
	setupLog.Info("metrics TLS profile", "profile", settings.Profile, "minVersion", tls.VersionName(settings.MinVersion), "followed", follow)
	return tlsprofile.NewServer(settings), follow, nil
}

// A waiting pod reads the holder's node to take over from a pod on a NotReady node: the rule is
// in config/rbac/leader_election_node_role.yaml, apart from the namespaced rules of the markers.

// memoryLimitEnv holds the container's memory limit in bytes (the downward API sets it).
const memoryLimitEnv = "MEMORY_LIMIT"

// setMemoryLimit sets the Go runtime's soft memory limit to 90% of the container's, unless
// GOMEMLIMIT sets it: near the limit the GC works harder instead of the kernel killing the pod.
func setMemoryLimit() {
	if limit := goMemLimit(os.Getenv("GOMEMLIMIT"), os.Getenv(memoryLimitEnv)); limit > 0 {
		debug.SetMemoryLimit(limit)
		setupLog.Info("Go memory limit set", "bytes", limit, "containerLimit", os.Getenv(memoryLimitEnv))
	}
}

// goMemLimit is 90% of the container's memory limit in bytes, or 0 when GOMEMLIMIT is set or
// there is no limit to follow.
func goMemLimit(goMemLimitEnv, containerLimit string) int64 {
	if goMemLimitEnv != "" {
		return 0
	}
	limit, err := strconv.ParseInt(containerLimit, 10, 64)
	if err != nil || limit <= 0 {
		return 0
	}
	return limit / 10 * 9
}

// becomeLeader blocks until this pod holds the leader lock, a ConfigMap owned by the pod and
// released when the pod is deleted, and returns the lease (nil outside a cluster, where there is no
// pod to own it: it says so and goes on, as a single instance).
func becomeLeader(ctx context.Context, cl client.Client, lockName string) (*leader.Lease, error) {
	setupLog.Info("waiting to become the leader", "lock", lockName)
	lease, err := leader.Become(ctx, cl, lockName)
	switch {
	case err != nil:
		return nil, err
	case lease == nil:
		setupLog.Info("not running in a cluster (no service account namespace): leader election skipped; run only one instance")
		return nil, nil
	}
	if took, from := lease.TookOver(); took {
		setupLog.Info("became the leader, taking the lock over", "lock", lockName, "pod", os.Getenv("POD_NAME"), "previousPod", from)
	} else {
		setupLog.Info("became the leader again after a restart in the same pod", "lock", lockName, "pod", os.Getenv("POD_NAME"))
	}
	return lease, nil
}
