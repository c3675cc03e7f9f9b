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

// Package helm is the operator's adapter around helm-operator-plugins' reconciler: the one place
// that knows how the library is wired and where it falls short. Setup builds the reconciler of one
// Helm-driven kind with the Operator SDK hybrid tutorial's options and this operator's levers,
// each of which has an upstream home (README, "upstream home"):
//   - the action client of ./actionclient (no-op reconciles without writes, pending-release
//     recovery, no rollback, Deployment replacement, release records read from the cache);
//   - a status client that merges the library's status with the Go side's (status.go);
//   - watches with predicates, so a reconcile is caused by others' changes only (watches.go);
//   - the library's events on the events.k8s.io recorder (events.go);
//   - release records sealed by the operator and checked on every read, and Helm's writes fenced
//     to the release (actionclient's seal.go and fence.go).
//
// What the kind's values mean (its translator) and which status conditions the Go side owns are
// the caller's: Options.
package helm

import (
	"context"
	"fmt"
	"time"

	"github.com/operator-framework/helm-operator-plugins/pkg/annotation"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"github.com/operator-framework/helm-operator-plugins/pkg/reconciler"
	"github.com/operator-framework/helm-operator-plugins/pkg/values"
	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/memcached-operator/internal/helm/actionclient"
	"github.com/example/memcached-operator/internal/helm/library"
)

// Settings are the operator-wide settings of the Helm reconcilers (the manager's flags). A watch
// in watches.yaml may set its own reconcilePeriod and maxConcurrentReconciles, which win over
// ReconcilePeriod and Workers.
type Settings struct {
	// ReconcilePeriod re-renders and re-checks each release this often (drift repair).
	ReconcilePeriod time.Duration
	// Workers is the number of concurrent reconciles.
	Workers int
	// MaxHistory is the number of release revisions kept per CR.
	MaxHistory int
	// CapabilitiesTTL is how long the cluster's capabilities are reused by every render; 0:
	// actionclient.DefaultCapabilitiesTTL.
	CapabilitiesTTL time.Duration
	// ExistenceSyncWait is how long Helm's existence checks of a kind wait for the cache's first
	// list of it; 0: actionclient.DefaultSyncWait.
	ExistenceSyncWait time.Duration
}

// Options are what Setup needs for one Helm-driven kind: the settings, and what the kind's
// values and status mean.
type Options struct {
	Settings
	// Translator turns a CR into the chart's values.
	Translator Translator
	// Namespaces are the watched namespaces (empty: all), where release records of earlier
	// versions are taken over.
	Namespaces []string
	// Live is an uncached client, for what the manager's cache does not hold.
	Live client.Client
	// MayRecoverPending: see actionclient.Config.
	MayRecoverPending func(context.Context) error
	// Records holds the decoded release records, when the manager's cache keeps them without
	// their data (CacheTransform: the cache's Secret transform); nil: the cache keeps their data.
	Records *Records
	// FirstReport, if set, gives the Go side's first report of a CR, which the Helm side's status
	// write that says its release is deployed carries while no condition of the Go side is set yet: one
	// write for both sides (status.go).
	FirstReport FirstReport
	// PartlyCached are the kinds the manager's cache holds only some objects of (by label): an
	// object missing there may exist, so Helm's existence checks of these go to the API server.
	PartlyCached []client.Object
	// RetiredKinds are the kinds earlier versions of the chart rendered and the current one does
	// not: an upgrade from such a release deletes its objects of these kinds, which the fence
	// lets through (actionclient.Fence).
	RetiredKinds []schema.GroupKind
	// SealNamespace holds the keys that seal the release records (actionclient.SealRingName): the
	// operator's own namespace, which tenants cannot read.
	SealNamespace string
	// BeforeUpgrade prepares the release's objects before each upgrade (actionclient.Config).
	BeforeUpgrade BeforeUpgrade
	// StatusInputs are the fields of a CR's status that its Translator reads, as dotted paths under
	// status ("autopilot.replicas"): a change of one reconciles the release, as a change of the
	// spec does.
	StatusInputs []string
}

// Setup registers the reconciler of the watch's kind with the manager: the release records' index
// and the take-over of earlier versions' records (before the first reconcile: the cache sees only
// labelled records), the release store on the manager's cache, the action client, the shared
// status and the watches. The operator has one Helm-driven kind; a second would share the index
// and must not call Setup again.
func Setup(ctx context.Context, mgr ctrl.Manager, w watches.Watch, opts Options) error {
	// Release records are tenant input: sealed by the operator, and whatever they say, Helm's
	// writes stay inside the release (actionclient's seal.go and fence.go). The keys come first:
	// the manager runs already, and the cache checks each record's seal as the informer, which
	// the index starts, lists them.
	seal, err := actionclient.LoadSeal(ctx, opts.Live, opts.SealNamespace, actionclient.SealRingName)
	if err != nil {
		return err
	}
	// Release records are read from the manager's cache (see actionclient.ReleaseStore).
	records := opts.Records
	if records == nil {
		records = actionclient.NewRecords()
	}
	records.UseSeal(seal)
	if err := actionclient.IndexReleaseRecords(ctx, mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("index Helm release records: %w", err)
	}
	recorder := mgr.GetEventRecorder(library.ControllerName(w.GroupVersionKind))
	fence, err := actionclient.NewFence(w.Chart, mgr.GetRESTMapper(), opts.Live, recorder, opts.RetiredKinds...)
	if err != nil {
		return fmt.Errorf("fence the releases of chart %s: %w", w.Chart.Name(), err)
	}
	// Release records are read from the manager's cache (see actionclient.ReleaseStore), which
	// may show the records sealed here a moment after the first reconcile: their releases are
	// read from the API server until it does.
	store := actionclient.NewReleaseStore(mgr.GetClient(), records, seal)
	sealed, err := actionclient.SealRecords(ctx, opts.Live, seal, fence, metav1.GroupVersionKind(w.GroupVersionKind), opts.Namespaces, seal.Since())
	if err != nil {
		return fmt.Errorf("seal the release records: %w", err)
	}
	store.Wrote(sealed.Written)
	log := ctrl.Log.WithName("setup")
	if sealed.Sealed > 0 {
		log.Info("sealed the release records written by an earlier version of the operator, after checking their manifests", "records", sealed.Sealed)
	}
	log.Info("release records are sealed with the newest key of the ring", "key", seal.Current(), "resealed", sealed.Resealed,
		"stillSealedWithOlderKeys", sealed.Older)
	for record, why := range sealed.Refused {
		log.Info("a release record of an earlier version is refused: it is not used, and its release reports it", "record", record, "why", why)
	}
	clientset, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("release records' sealing keys: %w", err)
	}
	// Keys rotate while the operator runs: a key added seals from then on (actionclient.RingWatch).
	if err := mgr.Add(&actionclient.RingWatch{Seal: seal, Namespace: opts.SealNamespace, Name: actionclient.SealRingName, Secrets: clientset, Client: opts.Live,
		Reseal: func(ctx context.Context) (actionclient.SealedRecords, error) {
			done, err := actionclient.SealRecords(ctx, opts.Live, seal, fence, metav1.GroupVersionKind(w.GroupVersionKind), opts.Namespaces, time.Time{})
			store.Wrote(done.Written)
			return done, err
		}}); err != nil {
		return fmt.Errorf("release records' sealing keys: %w", err)
	}

	period := opts.ReconcilePeriod
	if w.ReconcilePeriod != nil {
		period = w.ReconcilePeriod.Duration
	}
	workers := opts.Workers
	if w.MaxConcurrentReconciles != nil {
		workers = *w.MaxConcurrentReconciles
	}

	// A deleted record's decoded form goes with it.
	secrets, err := mgr.GetCache().GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return fmt.Errorf("release records' informer: %w", err)
	}
	if _, err := secrets.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: records.Forget}); err != nil {
		return fmt.Errorf("release records' informer: %w", err)
	}
	// Helm's existence checks before it creates objects are answered from the cache when absent.
	absent, err := actionclient.AbsentFromCache(mgr.GetCache(), mgr.GetRESTMapper(), mgr.GetScheme(), opts.ExistenceSyncWait, opts.PartlyCached...)
	if err != nil {
		return fmt.Errorf("helm existence checks: %w", err)
	}
	configs, err := helmclient.NewActionConfigGetter(mgr.GetConfig(), mgr.GetRESTMapper(), helmclient.StorageDriverMapper(store.DriverFor),
		helmclient.ClientRestConfigMapper(func(_ context.Context, cr client.Object, base *rest.Config) (*rest.Config, error) {
			return fence.Wrap(cr, absent(base)), nil
		}))
	if err != nil {
		return fmt.Errorf("helm action configuration: %w", err)
	}

	ttl := opts.CapabilitiesTTL
	if ttl == 0 {
		ttl = actionclient.DefaultCapabilitiesTTL
	}
	// No rollback on a failed upgrade: the library's forced rollback recreates objects whose
	// immutable fields changed, and a rollback of an upgrade that keeps failing loops. The
	// wrapper backs off instead and keeps the failed release for inspection.
	// Live reads: upgrades read the ReplicaSets they replace, which nothing else watches.
	getter, err := actionclient.NewGetter(configs, actionclient.Config{
		Clients:           actionclient.Clients{Live: opts.Live, Cached: mgr.GetClient()},
		Recorder:          recorder,
		CapabilitiesTTL:   ttl,
		MayRecoverPending: opts.MayRecoverPending,
		BeforeUpgrade:     opts.BeforeUpgrade,
	}, helmclient.WithFailureRollbacks(false))
	if err != nil {
		return fmt.Errorf("helm action client: %w", err)
	}
	ropts := []reconciler.Option{
		reconciler.WithClient(finalizerClient{sharedStatusClient{Client: mgr.GetClient(), live: opts.Live, firstReport: opts.FirstReport}}),
		reconciler.WithActionClientGetter(getter),
		reconciler.WithEventRecorder(libraryEvents{recorder}),
		reconciler.WithChart(*w.Chart),
		reconciler.WithGroupVersionKind(w.GroupVersionKind),
		reconciler.WithOverrideValues(w.OverrideValues),
		reconciler.WithValueTranslator(values.TranslatorFunc(func(ctx context.Context, u *unstructured.Unstructured) (chartutil.Values, error) {
			return opts.Translator(ctx, u)
		})),
		// The library sets its (identity) value mapper only in its SetupWithManager, which
		// setupController replaces; without a mapper every reconcile panics. The option is
		// deprecated without a replacement that sets it (upstream home: default it in New).
		//lint:ignore SA1019 the library gives no other way to set the mapper outside SetupWithManager
		reconciler.WithValueMapper(values.MapperFunc(func(v chartutil.Values) chartutil.Values { return v })),
		reconciler.WithReconcilePeriod(period),
		reconciler.WithMaxReleaseHistory(opts.MaxHistory),
		reconciler.WithWaitForDeletionTimeout(waitForDeletionTimeout),
		reconciler.WithInstallAnnotations(annotation.DefaultInstallAnnotations...),
		reconciler.WithUpgradeAnnotations(annotation.DefaultUpgradeAnnotations...),
		reconciler.WithUninstallAnnotations(annotation.DefaultUninstallAnnotations...),
		reconciler.WithLog(ctrl.Log.WithName("controllers").WithName(w.Kind)),
	}
	// The library's SetupWithManager is not used (see setupController): the workers, the
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
	if err := setupController(mgr, r, w.GroupVersionKind, workers, w.Selector, dependents, opts.StatusInputs); err != nil {
		return fmt.Errorf("set up Helm reconciler for %s: %w", w.GroupVersionKind, err)
	}
	return nil
}

// waitForDeletionTimeout is how long an uninstall waits for the CR to be gone (the library's
// default, which its own set-up would apply).
const waitForDeletionTimeout = 30 * time.Second

// Records holds the decoded release records the manager's cache keeps without their data (see
// actionclient.Records).
type Records = actionclient.Records

// NewRecords is an empty memo of decoded release records: its CacheTransform goes into the
// manager's cache options, and Options.Records is the same memo.
func NewRecords() *Records { return actionclient.NewRecords() }

// RecordSelector selects the release records this operator writes: the manager's Secret cache
// needs no other.
func RecordSelector() k8slabels.Selector { return actionclient.RecordSelector() }

// OwnedByRelease reports whether obj was made for the release of the CR cr (see
// actionclient.OwnedByRelease).
func OwnedByRelease(obj, cr client.Object) bool { return actionclient.OwnedByRelease(obj, cr) }

// Release is a revision of the release of the CR cr, from its sealed record (see Records.Release),
// or nil when none is known.
func Release(ctx context.Context, c client.Reader, records *Records, cr client.Object, version int32) (*Rendered, error) {
	rel, err := records.Release(ctx, c, cr, version)
	return RenderedOf(rel), err
}

// DeployedRevision is the revision of the deployed release of the CR cr, from the release
// records in the cache whose seal records verified (see Records.DeployedRevision).
func DeployedRevision(ctx context.Context, c client.Reader, records *Records, cr client.Object) (int32, error) {
	return records.DeployedRevision(ctx, c, cr)
}
