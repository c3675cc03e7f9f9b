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
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/metrics"
)

// TestMetricsAreDocumented holds docs/monitoring.md's table to the operator's own metrics as it
// registers them (the alerts' and dashboard's lint, tests/monitoring, trusts that table).
func TestMetricsAreDocumented(t *testing.T) {
	key := types.NamespacedName{Namespace: "docs", Name: "docs"}
	metrics.Operand.Set(key, &cachev1.MemcachedStats{HitRatioPercent: ptr.To(int32(50)),
		EvictionsPerSecond: resource.NewQuantity(1, resource.DecimalSI)}, 1)
	defer metrics.Operand.Forget(key)
	metrics.Autopilot.Set(key, &cachev1.AutopilotStatus{Replicas: 1, MaxMemoryMB: 64})
	metrics.Autopilot.Step(key, "grow_memory")
	metrics.Autopilot.Refused(key, "quota")
	defer metrics.Autopilot.Forget(key)
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	// The metrics read from the CRs at scrape time have no series without a collector and CRs.
	registered := map[string]bool{}
	for _, d := range metrics.ScrapeTime() {
		registered[regexp.MustCompile(`fqName: "([a-z_]+)"`).FindStringSubmatch(d.String())[1]] = true
	}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "memcached_operator_") {
			registered[f.GetName()] = true
		}
	}
	raw, err := os.ReadFile(filepath.Join("..", "docs", "monitoring.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`(memcached_operator_[a-z_]+)`").FindAllStringSubmatch(string(raw), -1) {
		documented[m[1]] = true
	}
	for name := range registered {
		if !documented[name] {
			t.Errorf("the operator exports %s, which docs/monitoring.md does not list", name)
		}
	}
	for name := range documented {
		if !registered[name] {
			t.Errorf("docs/monitoring.md lists %s, which the operator does not export", name)
		}
	}
	if len(registered) < 10 {
		t.Errorf("only %d of the operator's metrics were found: %v", len(registered), registered)
	}
}
