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

// Package monitoring tests what the operator ships for Prometheus and Grafana: the alerts of the
// chart (templates/prometheusrule.yaml) and of the operator (config/prometheus/rules.yaml) with
// promtool's rule unit tests in testdata/, their runbooks, and the dashboard (config/grafana).
package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"
)

// TestAlertRules renders the chart's rules for a Memcached "cache" in "shop" with two replicas,
// as the operator installs them, and runs promtool's checks and unit tests on them and on the
// operator's rules.
func TestAlertRules(t *testing.T) {
	promtool := promtoolPath(t)
	dir := t.TempDir()
	writeSpec(t, filepath.Join(dir, "memcached-rules.yaml"), chartRule(t))
	writeSpec(t, filepath.Join(dir, "operator-rules.yaml"), readYAML(t, filepath.Join(repoRoot(t), "config", "prometheus", "rules.yaml")))
	tests, err := filepath.Glob(filepath.Join("testdata", "*.test.yaml"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no promtool tests in testdata: %v", err)
	}
	for _, f := range tests {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, dir, promtool, "check", "rules", "memcached-rules.yaml", "operator-rules.yaml")
	args := []string{"test", "rules"}
	for _, f := range tests {
		args = append(args, filepath.Base(f))
	}
	run(t, dir, promtool, args...)
}

// TestEveryAlertHasARunbook: each alert links its page in docs/runbooks, has a summary and a
// description and a severity, is tested by a promtool test, and reads only metrics that exist;
// each runbook page belongs to an alert.
func TestEveryAlertHasARunbook(t *testing.T) {
	root := repoRoot(t)
	tested := ""
	tests, _ := filepath.Glob(filepath.Join("testdata", "*.test.yaml"))
	for _, f := range tests {
		raw, _ := os.ReadFile(f)
		tested += string(raw)
	}
	var alerts []string
	for _, rules := range []map[string]any{chartRule(t), readYAML(t, filepath.Join(root, "config", "prometheus", "rules.yaml"))} {
		groups, _ := dig(rules, "spec", "groups").([]any)
		for _, g := range groups {
			list, _ := dig(g, "rules").([]any)
			for _, r := range list {
				name, _ := dig(r, "alert").(string)
				alerts = append(alerts, name)
				want := "https://github.com/example/memcached-operator/blob/main/docs/runbooks/" + name + ".md"
				if got := dig(r, "annotations", "runbook_url"); got != want {
					t.Errorf("alert %s links runbook %v, want %s", name, got, want)
				}
				if _, err := os.Stat(filepath.Join(root, "docs", "runbooks", name+".md")); err != nil {
					t.Errorf("alert %s has no runbook: %v", name, err)
				}
				for _, a := range []string{"summary", "description"} {
					if s, _ := dig(r, "annotations", a).(string); s == "" {
						t.Errorf("alert %s has no %s", name, a)
					}
				}
				if sev := dig(r, "labels", "severity"); sev != "critical" && sev != "warning" {
					t.Errorf("alert %s has severity %v, want critical or warning", name, sev)
				}
				if !strings.Contains(tested, "alertname: "+name+"\n") {
					t.Errorf("alert %s has no promtool test in testdata", name)
				}
				expr, _ := dig(r, "expr").(string)
				checkMetrics(t, "alert "+name, expr)
			}
		}
	}
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "runbooks", "*.md"))
	for _, p := range pages {
		if name := strings.TrimSuffix(filepath.Base(p), ".md"); name != "README" && !slices.Contains(alerts, name) {
			t.Errorf("docs/runbooks/%s.md is the runbook of no alert", name)
		}
	}
	readme, err := os.ReadFile(filepath.Join(root, "docs", "runbooks", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range alerts {
		if !strings.Contains(string(readme), "["+a+"]("+a+".md)") {
			t.Errorf("docs/runbooks/README.md does not list %s", a)
		}
	}
}

// TestDashboard lints the Grafana dashboard: a dashboard Grafana loads (uid, title, the data
// source variable, unique panel ids, a place for each panel) whose every query promtool parses
// and reads only metrics that exist.
func TestDashboard(t *testing.T) {
	promtool := promtoolPath(t)
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "config", "grafana", "memcached-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID, Title    string
		SchemaVersion int
		Templating    struct {
			List []struct{ Name, Type string }
		}
		Panels []struct {
			ID      int
			Type    string
			Title   string
			GridPos *struct{ H, W, X, Y int }
			Targets []struct {
				RefID      string `json:"refId"`
				Expr       string
				Datasource struct{ UID string }
			}
		}
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("the dashboard is not JSON Grafana reads: %v", err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion == 0 {
		t.Errorf("the dashboard needs a uid, a title and a schemaVersion: %q %q %d", d.UID, d.Title, d.SchemaVersion)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" {
		t.Errorf("the dashboard needs a datasource variable, so it works with any Prometheus: %v", vars)
	}
	ids := map[int]bool{}
	var rules strings.Builder
	rules.WriteString("groups:\n- name: dashboard\n  rules:\n")
	queries := 0
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.H == 0 {
			t.Errorf("panel %q has no place (gridPos)", p.Title)
		}
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			if q.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q query %s uses data source %q, not the variable", p.Title, q.RefID, q.Datasource.UID)
			}
			checkMetrics(t, fmt.Sprintf("panel %q", p.Title), q.Expr)
			// The variables as Grafana fills them, so promtool parses the query.
			expr := strings.NewReplacer("$__rate_interval", "5m", "$namespace", ".*", "$memcached", ".*", "$operator", ".*").Replace(q.Expr)
			quoted, _ := json.Marshal(expr)
			fmt.Fprintf(&rules, "  - record: dashboard:query%d\n    expr: %s\n", queries, quoted)
			queries++
		}
	}
	file := filepath.Join(t.TempDir(), "dashboard-queries.yaml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, filepath.Dir(file), promtool, "check", "rules", filepath.Base(file))
}

// exporterMetrics are the memcached exporter's metrics that the alerts and the dashboard read
// (github.com/prometheus/memcached_exporter, pkg/exporter), and Prometheus's own up.
var exporterMetrics = []string{
	"up", "memcached_up", "memcached_items_evicted_total", "memcached_current_connections",
	"memcached_max_connections", "memcached_connections_rejected_total", "memcached_commands_total",
}

// controllerRuntimeMetrics are controller-runtime's metrics that the alerts and the dashboard
// read (book.kubebuilder.io, "Default Exported Metrics").
var controllerRuntimeMetrics = []string{
	"controller_runtime_reconcile_total", "controller_runtime_reconcile_errors_total",
	"controller_runtime_reconcile_time_seconds_bucket", "workqueue_depth",
}

var labelLists = regexp.MustCompile(`\{[^}]*\}|\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)

var metricName = regexp.MustCompile(`\b(up|memcached_[a-z_]+|controller_runtime_[a-z_]+|workqueue_[a-z_]+)\b`)

// checkMetrics fails for a metric an expression reads that nothing exports: a typo there is an
// alert that never fires or an empty panel. The operator's own are those docs/monitoring.md
// lists, which controllers' TestMetricsAreDocumented holds to what the operator registers.
func checkMetrics(t *testing.T, where, expr string) {
	t.Helper()
	operator := documentedMetrics(t)
	// Label names are no metrics: matchers and grouping go first.
	expr = labelLists.ReplaceAllString(expr, "")
	for _, m := range metricName.FindAllString(expr, -1) {
		if !slices.Contains(exporterMetrics, m) && !slices.Contains(controllerRuntimeMetrics, m) && !operator[m] {
			t.Errorf("%s reads %s, which neither the operator (docs/monitoring.md), controller-runtime nor the exporter exports", where, m)
		}
	}
}

// documentedMetrics are the operator's metrics that docs/monitoring.md names.
func documentedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "monitoring.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile("`(memcached_operator_[a-z_]+)`").FindAllStringSubmatch(string(raw), -1) {
		out[m[1]] = true
	}
	return out
}

// TestAlertsNeedWhatTheyRead: alerts without the exporter, or on a cluster without the
// PrometheusRule API, fail the release with a message that says so, instead of alerts that
// never fire (or, for MemcachedUnavailable, always).
func TestAlertsNeedWhatTheyRead(t *testing.T) {
	for name, tc := range map[string]struct {
		metrics map[string]any
		apis    []string
		want    string
	}{
		"no exporter": {map[string]any{"prometheusRule": map[string]any{"enabled": true}}, prometheusAPIs,
			"metrics.prometheusRule.enabled needs metrics.enabled and metrics.serviceMonitor.enabled"},
		// Nothing would scrape the exporter: MemcachedUnavailable would fire for ever.
		"no ServiceMonitor": {map[string]any{"enabled": true, "prometheusRule": map[string]any{"enabled": true}}, prometheusAPIs,
			"metrics.prometheusRule.enabled needs metrics.enabled and metrics.serviceMonitor.enabled"},
		"no PrometheusRule API": {alerts, prometheusAPIs[:2],
			"metrics.prometheusRule.enabled needs the Prometheus Operator"},
	} {
		if _, err := render(t, map[string]any{"metrics": tc.metrics}, tc.apis); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one that says %q", name, err, tc.want)
		}
	}
}

// prometheusAPIs are the Prometheus Operator's APIs the chart asks the cluster for.
var prometheusAPIs = []string{"monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule"}

// alerts are the metrics values of a Memcached with its alerts on.
var alerts = map[string]any{"enabled": true, "serviceMonitor": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true}}

// render renders the chart as the operator installs a Memcached "cache" in "shop".
func render(t *testing.T, values map[string]any, apis []string) (string, error) {
	t.Helper()
	chrt, err := loader.Load(filepath.Join(repoRoot(t), "helm-charts", "memcached"))
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = "cache", "shop"
	install.KubeVersion = &chartutil.KubeVersion{Version: "v1.35.4", Major: "1", Minor: "35"}
	install.APIVersions = append(chartutil.VersionSet{}, apis...)
	rel, err := install.Run(chrt, values)
	if err != nil {
		return "", err
	}
	return rel.Manifest, nil
}

// chartRule is the PrometheusRule the chart renders for a Memcached "cache" in "shop" with two
// replicas.
func chartRule(t *testing.T) map[string]any {
	t.Helper()
	manifest, err := render(t, map[string]any{"replicaCount": 2, "metrics": alerts}, prometheusAPIs)
	if err != nil {
		t.Fatalf("render the chart: %v", err)
	}
	for _, doc := range releaseutil.SplitManifests(manifest) {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		if obj["kind"] == "PrometheusRule" {
			return obj
		}
	}
	t.Fatal("the chart rendered no PrometheusRule with its alerts on")
	return nil
}

// writeSpec writes a PrometheusRule's spec, a Prometheus rule file.
func writeSpec(t *testing.T, file string, rule map[string]any) {
	t.Helper()
	raw, err := yaml.Marshal(rule["spec"])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readYAML(t *testing.T, file string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func run(t *testing.T, dir, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// promtoolPath is $PROMTOOL (make test-artifacts sets it), else the Makefile's bin/promtool.
func promtoolPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("PROMTOOL")
	if p == "" {
		p = filepath.Join(repoRoot(t), "bin", "promtool")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("promtool is missing (%v): `make test-artifacts` and `make tools` build it from hack/prometheus", err)
	}
	return p
}

func dig(obj any, path ...string) any {
	for _, p := range path {
		m, ok := obj.(map[string]any)
		if !ok {
			return nil
		}
		obj = m[p]
	}
	return obj
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
