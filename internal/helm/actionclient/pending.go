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
	"fmt"
	"strings"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
)

// Get returns a release; one left pending is recovered first. Only the leader reconciles (leader
// for life) and a CR is never reconciled twice at once, so a pending release seen at the start of a
// reconcile belongs to an operation that was cut off (the operator's pod was killed), not to one in
// progress. Unless two processes lead at once (the lock went while its holder still ran): then
// mayRecover holds the recovery back until the other process must have ended (internal/leader).
func (c *actionClient) Get(name string, opts ...helmclient.GetOption) (*release.Release, error) {
	rel, err := c.ActionInterface.Get(name, opts...)
	if err != nil || rel.Info == nil || !rel.Info.Status.IsPending() {
		c.current = rel
		return rel, c.reportRefused(err, "ReadRelease")
	}
	c.current = nil
	return c.recoverPending(rel)
}

func (c *actionClient) recoverPending(rel *release.Release) (*release.Release, error) {
	was := rel.Info.Status
	if c.mayRecover != nil {
		if err := c.mayRecover(c.ctx); err != nil {
			return nil, fmt.Errorf("release %s revision %d is %s, and is not recovered yet: %w", rel.Name, rel.Version, was, err)
		}
	}
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
