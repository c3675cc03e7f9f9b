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

// Package actionclient wraps helm-operator-plugins' Helm action client:
//   - reconciling an unchanged release sends no write to the API server;
//   - a release left pending by an operator that stopped in the middle of an install, upgrade or
//     rollback is recovered, instead of failing every reconcile with "another operation
//     (install/upgrade/rollback) is in progress";
//   - an upgrade that changes a Deployment's immutable selector (a chart release that changed its
//     selector labels) replaces the Deployment without stopping its pods (see replace.go);
//   - a failed upgrade is not retried with the same chart and values before a back-off
//     (30 s doubling up to 10 min), so a permanent failure does not pile up revisions; a change of
//     the CR or of the chart is tried at once. The operator turns the library's rollback on
//     failure off (WithFailureRollbacks(false)): a forced rollback recreates objects whose
//     immutable fields changed, and rollbacks of a failing upgrade loop;
//   - a release made by a newer chart than the operator's is left alone (no downgrade);
//   - the cluster's capabilities are read once per TTL (DefaultCapabilitiesTTL) for all releases, not for each
//     action, and a render is skipped only when the release was rendered under the current ones
//     (capabilities.go);
//   - each case records an Event on the CR.
//
// The library reconciles a release by patching each of its objects with a strategic merge patch
// computed from the rendered manifest. For fields whose patch strategy is "replace" (a
// PodDisruptionBudget's selector, for one) that patch is never empty, so every periodic
// reconcile sent a PATCH that changed nothing. The wrapper first checks, on the objects it reads
// anyway, whether applying the rendered objects would change any of them; only then does it let
// the library reconcile. The fix belongs upstream in createPatch; until then this wraps it
// without forking.
package actionclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	jsonpatch "github.com/evanphx/json-patch/v5"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Clients are the Kubernetes clients of the wrapper.
type Clients struct {
	// Live reads and deletes what upgrades replace. Uncached: ReplicaSets are not otherwise
	// watched.
	Live client.Client
	// Cached reads a release's objects for the in-sync check: the manager's cache, which the
	// Helm reconciler's watches of those objects keep current.
	Cached client.Client
}

// NewGetter returns an ActionClientGetter whose clients add the behaviour this package describes,
// recording an Event on the CR for each case. opts are the library's own client options.
func NewGetter(configs helmclient.ActionConfigGetter, clients Clients, recorder events.EventRecorder, capabilitiesTTL time.Duration, opts ...helmclient.ActionClientGetterOption) helmclient.ActionClientGetter {
	caps := newCapabilities(capabilitiesTTL)
	return helmclient.ActionClientGetterFunc(func(ctx context.Context, obj client.Object) (helmclient.ActionInterface, error) {
		conf, err := configs.ActionConfigFor(ctx, obj)
		if err != nil {
			return nil, err
		}
		capsNow, generation, err := caps.get(conf.RESTClientGetter)
		if err != nil {
			return nil, err
		}
		conf.Capabilities = capsNow
		if kc, ok := conf.KubeClient.(*kube.Client); ok {
			conf.KubeClient = reachableClient{Client: kc, caps: caps}
		}
		// One action configuration serves both the library's client and the in-sync check.
		getter, err := helmclient.NewActionClientGetter(fixedConfig{conf}, opts...)
		if err != nil {
			return nil, err
		}
		ac, err := getter.ActionClientFor(ctx, obj)
		if err != nil {
			return nil, err
		}
		return &actionClient{ActionInterface: ac, conf: conf, caps: caps, generation: generation,
			client: clients.Live, cached: clients.Cached, owner: obj, recorder: recorder}, nil
	})
}

type fixedConfig struct{ conf *action.Configuration }

func (f fixedConfig) ActionConfigFor(context.Context, client.Object) (*action.Configuration, error) {
	return f.conf, nil
}

type actionClient struct {
	helmclient.ActionInterface
	conf *action.Configuration
	// caps are the capabilities the action renders with, of this generation.
	caps       *capabilities
	generation int
	client     client.Client
	cached     client.Client
	// current is the release Get last returned: the reconcile's next step (a dry-run upgrade)
	// compares against it.
	current  *release.Release
	owner    client.Object // the CR of the release
	recorder events.EventRecorder
}

// Get returns a release; one left pending is recovered first. Only the leader reconciles (leader
// for life) and a CR is never reconciled twice at once, so a pending release seen at the start of a
// reconcile belongs to an operation that was cut off (the operator's pod was killed), not to one in
// progress.
func (c *actionClient) Get(name string, opts ...helmclient.GetOption) (*release.Release, error) {
	rel, err := c.ActionInterface.Get(name, opts...)
	if err != nil || rel.Info == nil || !rel.Info.Status.IsPending() {
		c.current = rel
		return rel, err
	}
	c.current = nil
	return c.recoverPending(rel)
}

func (c *actionClient) recoverPending(rel *release.Release) (*release.Release, error) {
	was := rel.Info.Status
	if was == release.StatusPendingInstall && rel.Version == 1 {
		// Nothing was ever deployed: forget the record; the next install adopts what the cut-off
		// install created (its objects carry the release's annotations).
		if _, err := c.conf.Releases.Delete(rel.Name, rel.Version); err != nil {
			return nil, fmt.Errorf("remove release %s left %s: %w", rel.Name, was, err)
		}
		c.recorder.Eventf(c.owner, nil, corev1.EventTypeWarning, "ReleaseRecovered", "RecoverRelease",
			"Release %s was left %s by an interrupted install; its record is removed and it is installed again", rel.Name, was)
		return nil, driver.ErrReleaseNotFound
	}
	rel.SetStatus(release.StatusFailed, fmt.Sprintf("left %s by an interrupted operation; %s", was, interruptedMark))
	if err := c.conf.Releases.Update(rel); err != nil {
		return nil, fmt.Errorf("mark release %s revision %d (left %s) failed: %w", rel.Name, rel.Version, was, err)
	}
	c.recorder.Eventf(c.owner, nil, corev1.EventTypeWarning, "ReleaseRecovered", "RecoverRelease",
		"Release %s revision %d was left %s by an interrupted operation; it is marked failed and upgraded again", rel.Name, rel.Version, was)
	return rel, nil
}

// interruptedMark ends the description of a revision recoverPending marked failed. The operation
// was cut off, it did not fail: it is retried at once, without back-off.
const interruptedMark = "marked failed by the operator"

func interrupted(rel *release.Release) bool {
	return rel.Info != nil && rel.Info.Status == release.StatusFailed && strings.HasSuffix(rel.Info.Description, interruptedMark)
}

// Back-off of a failed upgrade retried with the same chart and values.
const (
	FailedRetryBase = 30 * time.Second
	FailedRetryMax  = 10 * time.Minute
)

// Upgrade upgrades a release: dry runs (the library renders the chart this way on every
// reconcile) pass through; a real upgrade is checked, prepared and reported first.
func (c *actionClient) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]any, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	if isDryRun(c.conf, opts) {
		// Nothing to render when the deployed release was made from this chart version and
		// these values, and the chart was rendered for it under the current capabilities: its
		// manifest is what the chart renders. This is every periodic reconcile of an unchanged
		// CR in an unchanged cluster.
		cur := c.current
		if cur != nil && cur.Name == name && cur.Info != nil && cur.Info.Status == release.StatusDeployed &&
			sameInputs(cur, chrt, vals) && c.caps.renderedAt(key) == c.generation {
			return cur, nil
		}
		rel, err := c.ActionInterface.Upgrade(name, namespace, chrt, vals, append(opts, skipParamCheck)...)
		if err == nil && cur != nil && rel.Manifest == cur.Manifest {
			// Up to date under these capabilities; a different render is upgraded next, and
			// only that upgrade's success marks it.
			c.caps.renderedUnder(key, c.generation)
		}
		return rel, err
	}
	// The library read the release (Get) just before upgrading it.
	last := c.current
	if last == nil || last.Name != name {
		var err error
		if last, err = c.conf.Releases.Last(name); err != nil {
			return nil, fmt.Errorf("read release %s: %w", name, err)
		}
	}
	from, to := c.runningChart(last), chartVersion(chrt)
	newest := chartVersion(last.Chart) // a failed or cut-off upgrade to a newer chart counts too
	if newer(from, newest) {
		newest = from
	}
	if newer(newest, to) {
		c.recorder.Eventf(c.owner, nil, corev1.EventTypeWarning, "DowngradeRefused", "UpgradeRelease",
			"Release %s was made by chart %s, newer than this operator's chart %s: it is left as it is", name, newest, to)
		return nil, fmt.Errorf("release %s was made by chart %s, newer than this operator's chart %s: downgrades are not supported, run the newer operator", name, newest, to)
	}
	if err := c.backOff(last, chrt, vals); err != nil {
		return nil, err
	}
	target, err := c.render(name, namespace, chrt, vals, opts)
	if err != nil {
		return nil, fmt.Errorf("render chart %s for release %s: %w", to, name, err)
	}
	// Helm patches the objects of the last release without asking who made them now.
	if err := c.refuseForeign(target.Manifest, name, namespace); err != nil {
		return nil, err
	}
	if err := c.replaceDeployments(target, namespace, to); err != nil {
		c.recorder.Eventf(c.owner, nil, corev1.EventTypeWarning, "UpgradeFailed", "UpgradeRelease", "Upgrade of release %s to chart %s: %v", name, to, err)
		return nil, err
	}
	rel, err := c.ActionInterface.Upgrade(name, namespace, chrt, vals, append(opts, skipParamCheck)...)
	if err != nil {
		err = c.explainConflict(name, err)
		c.recorder.Eventf(c.owner, nil, corev1.EventTypeWarning, "UpgradeFailed", "UpgradeRelease",
			"Upgrade of release %s to chart %s failed; the release is left failed, not rolled back, and the same upgrade is retried after %s or at once when the resource changes: %v",
			name, to, FailedRetryBase, err)
		return nil, err
	}
	c.caps.renderedUnder(key, c.generation)
	if from != to {
		c.recorder.Eventf(c.owner, nil, corev1.EventTypeNormal, "ChartUpgraded", "UpgradeRelease", "Release %s moved from chart %s to %s (revision %d)", name, from, to, rel.Version)
	}
	return rel, nil
}

// Install installs a release (see skipParamCheck).
func (c *actionClient) Install(name, namespace string, chrt *chart.Chart, vals map[string]any, opts ...helmclient.InstallOption) (*release.Release, error) {
	rel, err := c.ActionInterface.Install(name, namespace, chrt, vals, append(opts, func(i *action.Install) error {
		i.DisableOpenAPIValidation = true
		return nil
	})...)
	if errors.Is(err, driver.ErrReleaseExists) {
		return rel, c.takeOver(name)
	}
	if err != nil {
		return rel, c.explainConflict(name, err)
	}
	c.caps.renderedUnder(types.NamespacedName{Namespace: namespace, Name: name}, c.generation)
	return rel, nil
}

// explainConflict says what to do when Helm refused to take over an object that another
// release, another CR or someone else made (Helm's check of its ownership metadata): the
// operator never adopts such objects.
func (c *actionClient) explainConflict(name string, err error) error {
	if !strings.Contains(err.Error(), "exists and cannot be imported into the current release") {
		return err
	}
	c.recorder.Eventf(c.owner, nil, corev1.EventTypeWarning, "NameConflict", "ApplyRelease",
		"Release %s would take over an object it did not make, which the operator never does: %v", name, err)
	return fmt.Errorf("an object this release would create exists and was made by someone else (another Memcached, a MemcachedBackup, another Helm release or a user); the operator leaves it alone: rename this %s or remove that object: %w",
		c.owner.GetObjectKind().GroupVersionKind().Kind, err)
}

// Uninstall uninstalls a release and forgets when it was rendered. A release name Helm cannot
// use (a CR made before admission checked names) never had a release: the uninstall is done, so
// the CR's deletion is not held up by its finalizer.
func (c *actionClient) Uninstall(name string, opts ...helmclient.UninstallOption) (*release.UninstallReleaseResponse, error) {
	if err := chartutil.ValidateReleaseName(name); err != nil {
		return nil, fmt.Errorf("%v: no release was ever made under this name: %w", err, driver.ErrReleaseNotFound)
	}
	resp, err := c.ActionInterface.Uninstall(name, opts...)
	if err == nil {
		c.caps.forget(types.NamespacedName{Namespace: c.owner.GetNamespace(), Name: name})
	}
	return resp, err
}

// skipParamCheck turns off what Helm calls OpenAPI validation. On every API server this operator
// supports (1.27+ serves the fieldValidation parameter) that validation validates nothing: kubectl's
// validator asks the server's OpenAPI v3 document whether it supports fieldValidation and, since it
// does, leaves validation to the server, to which Helm does not send the parameter. The question
// alone costs a fetch and parse of the OpenAPI document per install, upgrade and render, most of an
// install's CPU. The API server still rejects invalid objects, and the chart's rendered objects
// are checked with strict field validation in the tests.
func skipParamCheck(u *action.Upgrade) error {
	u.DisableOpenAPIValidation = true
	return nil
}

func isDryRun(conf *action.Configuration, opts []helmclient.UpgradeOption) bool {
	u := action.NewUpgrade(conf)
	for _, o := range opts {
		_ = o(u)
	}
	return u.DryRun || (u.DryRunOption != "" && u.DryRunOption != "none" && u.DryRunOption != "false")
}

// runningChart is the chart version of the release's last deployed revision: a later revision
// that failed or was cut off did not move the release to its chart. It is the last revision's
// when none was deployed.
func (c *actionClient) runningChart(last *release.Release) string {
	if last.Info != nil && last.Info.Status == release.StatusDeployed {
		return chartVersion(last.Chart)
	}
	if deployed, err := c.conf.Releases.Deployed(last.Name); err == nil {
		return chartVersion(deployed.Chart)
	}
	return chartVersion(last.Chart)
}

func chartVersion(c *chart.Chart) string {
	if c == nil || c.Metadata == nil {
		return ""
	}
	return c.Metadata.Version
}

// newer reports whether chart version a is newer than b (false when either is not semver).
func newer(a, b string) bool {
	va, errA := semver.NewVersion(a)
	vb, errB := semver.NewVersion(b)
	return errA == nil && errB == nil && va.GreaterThan(vb)
}

// backOff refuses to retry an upgrade that failed with the same chart and values until its
// back-off has passed: FailedRetryBase after the last attempt, doubling with each consecutive
// failure of the same upgrade, up to FailedRetryMax.
func (c *actionClient) backOff(last *release.Release, chrt *chart.Chart, vals map[string]any) error {
	if last.Info == nil || last.Info.Status != release.StatusFailed || interrupted(last) || !sameInputs(last, chrt, vals) {
		return nil
	}
	history, err := c.conf.Releases.History(last.Name)
	if err != nil {
		return fmt.Errorf("read the history of release %s: %w", last.Name, err)
	}
	next := last.Info.LastDeployed.Add(retryDelay(history, chrt, vals))
	if time.Now().Before(next.Time) {
		return fmt.Errorf("the upgrade of release %s to chart %s failed (%s); the same upgrade is retried at %s, or at once when the resource changes",
			last.Name, chartVersion(chrt), last.Info.Description, next.UTC().Format(time.RFC3339))
	}
	return nil
}

// retryDelay is the back-off after the newest revision of history, a failed upgrade to chrt with
// vals: FailedRetryBase, doubled for each consecutive earlier revision that failed the same way
// (not one cut off by a stopped operator), up to FailedRetryMax.
func retryDelay(history []*release.Release, chrt *chart.Chart, vals map[string]any) time.Duration {
	history = slices.Clone(history)
	sort.Slice(history, func(i, j int) bool { return history[i].Version > history[j].Version })
	delay := FailedRetryBase
	for _, r := range history[1:] {
		if r.Info == nil || r.Info.Status != release.StatusFailed || interrupted(r) || !sameInputs(r, chrt, vals) || delay >= FailedRetryMax {
			break
		}
		delay *= 2
	}
	return min(delay, FailedRetryMax)
}

// sameInputs reports whether a release was made from this chart version and these values.
func sameInputs(rel *release.Release, chrt *chart.Chart, vals map[string]any) bool {
	if chartVersion(rel.Chart) != chartVersion(chrt) {
		return false
	}
	a, errA := json.Marshal(rel.Config)
	b, errB := json.Marshal(vals)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// Reconcile repairs drift of the release's objects, and does nothing when there is none. An
// object someone else made in the place of one of the release's is left alone.
func (c *actionClient) Reconcile(rel *release.Release) error {
	inSync, err := InSync(context.Background(), c.cached, c.conf.KubeClient, rel.Manifest)
	if err != nil {
		return err
	}
	if inSync {
		return nil
	}
	if err := c.refuseForeign(rel.Manifest, rel.Name, rel.Namespace); err != nil {
		return err
	}
	return c.ActionInterface.Reconcile(rel)
}

// refuseForeign fails when an object of a manifest exists but Helm did not make it for this
// release (someone replaced it, or it was always someone else's): the operator would patch it,
// that is adopt it, and it never adopts what it did not make.
func (c *actionClient) refuseForeign(manifest, name, namespace string) error {
	objs, err := parsed(c.conf.KubeClient, manifest)
	if err != nil {
		return err
	}
	for _, o := range objs {
		key := o.key
		if key.Namespace == "" {
			key.Namespace = namespace
		}
		// Live, not from the cache: Helm decides on what it reads live the next moment.
		live := NewObject(c.client.Scheme(), o.gvk)
		if err := c.client.Get(context.Background(), key, live); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("read %s %s: %w", o.gvk.Kind, key.Name, err)
		}
		if !OwnedByRelease(live, c.owner) {
			return c.explainConflict(name, fmt.Errorf("%s %q in namespace %q exists and cannot be imported into the current release: Helm did not make it for release %s",
				o.gvk.Kind, key.Name, key.Namespace, name))
		}
	}
	return nil
}

// InSync reports whether every object of a manifest exists and already holds every field the
// manifest sets for it, reading the objects from c: typed where its scheme knows the kind, as
// the Helm controller watches them.
func InSync(ctx context.Context, c client.Client, kc kube.Interface, manifest string) (bool, error) {
	objs, err := parsed(kc, manifest)
	if err != nil {
		return false, err
	}
	for _, expected := range objs {
		existing := NewObject(c.Scheme(), expected.gvk)
		if err := c.Get(ctx, expected.key, existing); err != nil {
			return false, nil // missing, or unreadable: the library's reconcile handles and reports it
		}
		existing.GetObjectKind().SetGroupVersionKind(expected.gvk) // as in the manifest
		same, err := holds(existing, expected)
		if err != nil || !same {
			return false, err
		}
	}
	return true, nil
}

// NewObject is an empty object of a kind: typed when the scheme knows the kind, so a release's
// objects are read from and watched in the manager's typed caches (the Go side watches the
// Deployments too), which take a fraction of the memory of unstructured copies.
func NewObject(scheme *runtime.Scheme, gvk schema.GroupVersionKind) client.Object {
	if typed, err := scheme.New(gvk); err == nil {
		if obj, ok := typed.(client.Object); ok {
			return obj
		}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// expectedObject is an object of a release manifest, as the in-sync check needs it.
type expectedObject struct {
	gvk  schema.GroupVersionKind
	key  client.ObjectKey
	json []byte
	// patchType is a zero object of the kind's Go type, whose field tags say how the library
	// patches it (strategic merge), or nil for kinds patched with a JSON merge patch.
	patchType runtime.Object
}

// manifests memoizes the objects of release manifests: a release's manifest does not change, and
// parsing it (YAML, REST mapping) was a good part of an idle reconcile.
var manifests = struct {
	sync.Mutex
	byHash map[[sha256.Size]byte][]expectedObject
}{byHash: map[[sha256.Size]byte][]expectedObject{}}

// maxManifests bounds the memo; past it, it starts again (a release per CR, a few kB each).
const maxManifests = 4096

func parsed(kc kube.Interface, manifest string) ([]expectedObject, error) {
	key := sha256.Sum256([]byte(manifest))
	manifests.Lock()
	objs, ok := manifests.byHash[key]
	manifests.Unlock()
	if ok {
		return objs, nil
	}
	infos, err := kc.Build(bytes.NewBufferString(manifest), false)
	if err != nil {
		return nil, fmt.Errorf("build release objects: %w", err)
	}
	for _, info := range infos {
		raw, err := json.Marshal(info.Object)
		if err != nil {
			return nil, err
		}
		obj := expectedObject{gvk: info.Mapping.GroupVersionKind, key: client.ObjectKey{Namespace: info.Namespace, Name: info.Name}, json: raw}
		versioned := kube.AsVersioned(info)
		_, isUnstructured := versioned.(runtime.Unstructured)
		_, isCRD := versioned.(*apiextensionsv1.CustomResourceDefinition)
		if !isUnstructured && !isCRD {
			obj.patchType = reflect.New(reflect.TypeOf(versioned).Elem()).Interface().(runtime.Object)
		}
		objs = append(objs, obj)
	}
	manifests.Lock()
	if len(manifests.byHash) >= maxManifests {
		clear(manifests.byHash)
	}
	manifests.byHash[key] = objs
	manifests.Unlock()
	return objs, nil
}

// holds reports whether applying expected to existing, with the patch semantics the library
// uses for its kind, leaves existing unchanged.
func holds(existing runtime.Object, expected expectedObject) (bool, error) {
	existingJSON, err := json.Marshal(existing)
	if err != nil {
		return false, err
	}
	var merged []byte
	if expected.patchType == nil {
		merged, err = jsonpatch.MergePatch(existingJSON, expected.json)
	} else {
		merged, err = strategicpatch.StrategicMergePatch(existingJSON, expected.json, expected.patchType)
	}
	if err != nil {
		return false, fmt.Errorf("merge %s %s: %w", expected.gvk.Kind, expected.key.Name, err)
	}
	var before, after any
	if err := json.Unmarshal(existingJSON, &before); err != nil {
		return false, err
	}
	if err := json.Unmarshal(merged, &after); err != nil {
		return false, err
	}
	return reflect.DeepEqual(before, after), nil
}
