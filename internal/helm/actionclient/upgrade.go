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

package actionclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

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
		cur, _ := c.lastRelease(name) // none: render
		if cur != nil && cur.Info != nil && cur.Info.Status == release.StatusDeployed &&
			sameInputs(cur, chrt, vals) && c.caps.renderedAt(key) == c.generation {
			return cur, nil
		}
		if err := validValues(chrt, vals); err != nil {
			return nil, err
		}
		rel, err := c.ActionInterface.Upgrade(name, namespace, chrt, vals, opts...)
		if err == nil && cur != nil && rel.Manifest == cur.Manifest {
			// Up to date under these capabilities; a different render is upgraded next, and
			// only that upgrade's success marks it.
			c.caps.renderedUnder(key, c.generation)
		}
		return rel, err
	}
	last, err := c.lastRelease(name)
	if err != nil {
		return nil, c.reportRefused(fmt.Errorf("read release %s: %w", name, err), "UpgradeRelease")
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
	var target *release.Release
	if err = validValues(chrt, vals); err == nil {
		target, err = c.render(name, namespace, chrt, vals, opts)
	}
	if err != nil {
		countOperation("upgrade", err) // the chart refused the values or the cluster, as an install's render does
		return nil, fmt.Errorf("render chart %s for release %s: %w", to, name, err)
	}
	// Helm patches the objects of the last release without asking who made them now.
	if err := c.refuseForeign(target.Manifest, name, namespace); err != nil {
		return nil, err
	}
	// The objects the target renders, for what an update cannot change (replace.go).
	infos, err := c.conf.KubeClient.Build(bytes.NewBufferString(target.Manifest), false)
	if err != nil {
		countOperation("upgrade", err)
		return nil, fmt.Errorf("build the objects of release %s: %w", name, err)
	}
	if err := c.replaceDeployments(infos, namespace, to); err != nil {
		countOperation("upgrade", err)
		c.recorder.Eventf(c.owner, nil, corev1.EventTypeWarning, "UpgradeFailed", "UpgradeRelease", "Upgrade of release %s to chart %s: %v", name, to, err)
		return nil, err
	}
	if c.beforeUpgrade != nil {
		if err := c.beforeUpgrade(c.ctx, c.owner, RenderedOf(last), RenderedOf(target)); err != nil {
			countOperation("upgrade", err)
			c.recorder.Eventf(c.owner, nil, corev1.EventTypeWarning, "UpgradeFailed", "UpgradeRelease", "Upgrade of release %s to chart %s: %v", name, to, err)
			return nil, fmt.Errorf("prepare the upgrade of release %s: %w", name, err)
		}
	}
	if err := c.replaceStatefulSets(infos, namespace, to); err != nil {
		countOperation("upgrade", err)
		c.recorder.Eventf(c.owner, nil, corev1.EventTypeWarning, "UpgradeFailed", "UpgradeRelease", "Upgrade of release %s to chart %s: %v", name, to, err)
		return nil, err
	}
	rel, err := c.ActionInterface.Upgrade(name, namespace, chrt, vals, opts...)
	countOperation("upgrade", err)
	if err != nil {
		if dropped, derr := c.dropForeignConflict(rel, err); dropped {
			err = derr // the deployed revision stays the last: nothing to back off from
		}
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

// Install installs a release.
func (c *actionClient) Install(name, namespace string, chrt *chart.Chart, vals map[string]any, opts ...helmclient.InstallOption) (*release.Release, error) {
	if err := validValues(chrt, vals); err != nil {
		countOperation("install", err)
		return nil, err
	}
	if d, ok := c.conf.Releases.Driver.(*storeDriver); ok {
		d.checkFree(recordKey(name, 1))
	}
	rel, err := c.ActionInterface.Install(name, namespace, chrt, vals, opts...)
	if err == nil {
		if uerr := unrecorded(c.conf.Releases.Driver); uerr != nil {
			// Installed, but without its record: the next install adopts what this one made,
			// unless a record of that name appeared meanwhile (someone else's release).
			err = fmt.Errorf("release %s was installed but its record could not be written: %w", name, uerr)
		}
	}
	if errors.Is(err, driver.ErrReleaseExists) {
		// A record of this name exists that the operator's reads did not show: found before the
		// install (nothing was done), or made while it ran (what it made has no record; the
		// CR's deletion removes it with its owner).
		return rel, c.takeOver(name)
	}
	countOperation("install", err)
	if err != nil {
		if dropped, derr := c.dropForeignConflict(rel, err); dropped {
			return rel, derr
		}
		return rel, c.explainConflict(name, err)
	}
	c.caps.renderedUnder(types.NamespacedName{Namespace: namespace, Name: name}, c.generation)
	return rel, nil
}

// dropForeignConflict removes the record of a failed install or upgrade whose create met an object
// that exists (made by someone else after Helm found it absent: AbsentFromCache's view, or its
// own check, a moment old): that record names the object, and an uninstall of it would delete
// it. Without the record, the next attempt checks who made it. It says whether it was that case.
func (c *actionClient) dropForeignConflict(rel *release.Release, err error) (bool, error) {
	if rel == nil || !apierrors.IsAlreadyExists(err) {
		return false, err
	}
	if _, derr := c.conf.Releases.Delete(rel.Name, rel.Version); derr != nil && !errors.Is(derr, driver.ErrReleaseNotFound) {
		return true, fmt.Errorf("release %s failed (%w), and its record naming an object made by someone else could not be removed: %v", rel.Name, err, derr)
	}
	return true, fmt.Errorf("release %s met an object made meanwhile by someone else; its record (revision %d) is removed so that nothing of theirs is ever deleted with it, and the next attempt checks who made it: %w",
		rel.Name, rel.Version, err)
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
// the CR's deletion is not held up by its finalizer. A release the cache does not show is
// looked for on the API server before the uninstall says there is none.
func (c *actionClient) Uninstall(name string, opts ...helmclient.UninstallOption) (*release.UninstallReleaseResponse, error) {
	if err := chartutil.ValidateReleaseName(name); err != nil {
		return nil, fmt.Errorf("%v: no release was ever made under this name: %w", err, driver.ErrReleaseNotFound)
	}
	// A release another process may still be working on (two leaders at once) is not uninstalled
	// under it: the finalizer holds the CR until it may be (pending.go).
	if last, err := c.conf.Releases.Last(name); err == nil && last.Info != nil && last.Info.Status.IsPending() && c.mayRecover != nil {
		if err := c.mayRecover(c.ctx); err != nil {
			return nil, fmt.Errorf("release %s revision %d is %s, and is not uninstalled yet: %w", name, last.Version, last.Info.Status, err)
		}
	}
	resp, err := c.ActionInterface.Uninstall(name, opts...)
	if err == nil {
		c.caps.forget(types.NamespacedName{Namespace: c.owner.GetNamespace(), Name: name})
	}
	// Also when there was no release: the CR is going, and a memo kept is only parsed again.
	forgetManifest(types.NamespacedName{Namespace: c.owner.GetNamespace(), Name: name})
	if errors.Is(err, driver.ErrReleaseNotFound) {
		// Nothing was uninstalled (the library calls this for a CR without a release too), and
		// the library removes the finalizer next: only when the API server holds no record of
		// the release either, which the cache may not show yet.
		if d, ok := c.conf.Releases.Driver.(*storeDriver); ok {
			if uerr := d.unseenRecord(c.ctx, name); uerr != nil {
				return resp, uerr
			}
		}
		return resp, err
	}
	countOperation("uninstall", err)
	return resp, c.reportRefused(err, "UninstallRelease")
}

// lastRelease is the newest revision of release name: the one Get returned, as the library reads
// the release at the start of each reconcile, else read from the (cached) release records.
func (c *actionClient) lastRelease(name string) (*release.Release, error) {
	if c.current != nil && c.current.Name == name {
		return c.current, nil
	}
	return c.conf.Releases.Last(name)
}

// skipOpenAPIValidation turns off, for every install, upgrade and render, what Helm calls OpenAPI
// validation (the library's default options of its clients). On every API server this operator
// supports (1.27+ serves the fieldValidation parameter) that validation validates nothing: kubectl's
// validator asks the server's OpenAPI v3 document whether it supports fieldValidation and, since it
// does, leaves validation to the server, to which Helm does not send the parameter. The question
// alone costs a fetch and parse of the OpenAPI document per install, upgrade and render, most of an
// install's CPU. The API server still rejects invalid objects, and the chart's rendered objects
// are checked with strict field validation in the tests.
var skipOpenAPIValidation = []helmclient.ActionClientGetterOption{
	helmclient.AppendInstallOptions(func(i *action.Install) error {
		i.DisableOpenAPIValidation = true
		return nil
	}),
	helmclient.AppendUpgradeOptions(func(u *action.Upgrade) error {
		u.DisableOpenAPIValidation = true
		return nil
	}),
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
