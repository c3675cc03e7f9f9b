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
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
)

// The back-off of a failed upgrade doubles with each consecutive failure of the same upgrade, and
// starts again after anything else: a success, other inputs, or a revision cut off by a stopped
// operator.
func TestRetryDelay(t *testing.T) {
	chrt := &chart.Chart{Metadata: &chart.Metadata{Name: "memcached", Version: "1.0.0"}}
	other := &chart.Chart{Metadata: &chart.Metadata{Name: "memcached", Version: "0.2.0"}}
	vals := map[string]any{"replicaCount": 3}
	rev := func(version int, status release.Status, c *chart.Chart, v map[string]any, description string) *release.Release {
		return &release.Release{Name: "m", Version: version, Chart: c, Config: v,
			Info: &release.Info{Status: status, Description: description}}
	}
	failed := func(version int) *release.Release {
		return rev(version, release.StatusFailed, chrt, vals, "upgrade failed")
	}
	for _, tc := range []struct {
		name    string
		history []*release.Release
		want    time.Duration
	}{
		{"the first failure", []*release.Release{rev(1, release.StatusSuperseded, chrt, vals, ""), failed(2)}, FailedRetryBase},
		{"a second one", []*release.Release{rev(1, release.StatusSuperseded, chrt, vals, ""), failed(2), failed(3)}, 2 * FailedRetryBase},
		{"a third one, history unsorted", []*release.Release{failed(4), failed(2), failed(3), rev(1, release.StatusDeployed, chrt, vals, "")}, 4 * FailedRetryBase},
		{"a failure of other values before", []*release.Release{rev(1, release.StatusFailed, chrt, map[string]any{"replicaCount": 1}, "upgrade failed"), failed(2)}, FailedRetryBase},
		{"a failure of another chart before", []*release.Release{rev(1, release.StatusFailed, other, vals, "upgrade failed"), failed(2)}, FailedRetryBase},
		{"an interrupted revision before", []*release.Release{rev(1, release.StatusFailed, chrt, vals, "cut off"+interruptedMark), failed(2)}, FailedRetryBase},
		{"capped", []*release.Release{failed(1), failed(2), failed(3), failed(4), failed(5), failed(6), failed(7), failed(8), failed(9)}, FailedRetryMax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := retryDelay(tc.history, chrt, vals); got != tc.want {
				t.Errorf("retryDelay = %s, want %s", got, tc.want)
			}
		})
	}
}
