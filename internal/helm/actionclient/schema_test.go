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
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

// The operator's check of the values refuses what Helm's refuses, with Helm's message, and
// compiles the chart's schema once.
func TestValuesAreCheckedAsHelmChecksThem(t *testing.T) {
	chrt := memcachedChart(t)
	for _, raw := range []string{
		`{}`,
		`{replicaCount: 3, memcached: {maxMemoryMB: 128, extraArgs: ["-R40"]}}`,
		`{replicaCount: -1}`,
		`{replicaCount: "3"}`,
		`{unknownField: true}`,
		`{memcached: {maxMemoryMB: 1}, antiAffinity: sometimes}`,
		`{autoscaling: {enabled: true, coolDown: "soon"}}`,
	} {
		var vals map[string]any
		if err := yaml.Unmarshal([]byte(raw), &vals); err != nil {
			t.Fatal(err)
		}
		_, helmErr := chartutil.ToRenderValuesWithSchemaValidation(chrt, vals, chartutil.ReleaseOptions{Name: "m", Namespace: "ns"}, nil, false)
		ours := validValues(chrt, vals)
		switch {
		case (helmErr == nil) != (ours == nil):
			t.Errorf("%s: Helm says %v, the operator %v", raw, helmErr, ours)
		case helmErr != nil && !slices.Equal(sortedLines(helmErr), sortedLines(ours)): // several causes come in any order
			t.Errorf("%s: Helm says\n%s\nthe operator\n%s", raw, helmErr, ours)
		}
	}
	first, err := schemas.of(chrt.Schema)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := schemas.of(append([]byte(nil), chrt.Schema...)); again != first {
		t.Error("the same schema was compiled twice")
	}
}

func sortedLines(err error) []string {
	lines := strings.Split(err.Error(), "\n")
	slices.Sort(lines)
	return lines
}
