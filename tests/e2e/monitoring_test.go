//go:build e2e

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

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// proveMonitoring runs a real Prometheus (built from its Go module, on this machine) that scrapes
// the operator and the memcached exporter of a Memcached with its alerts on, and evaluates the
// rules the operator ships: the chart's PrometheusRule as the release made it, and
// config/prometheus/rules.yaml. A load that overfills the cache then shows everywhere a user
// looks: MemoryPressure and its Event on the CR, the operator's evictions gauge, the evictions
// alert firing; and all of it clears when the load stops.
func proveMonitoring() {
	prometheus := os.Getenv("E2E_PROMETHEUS")
	Expect(prometheus).NotTo(BeEmpty(), "E2E_PROMETHEUS names the prometheus binary: run `make test-e2e`")
	ns := "memcached-monitoring"
	key := types.NamespacedName{Namespace: ns, Name: "cache"}
	const job = "cache-memcached" // the Service's name, the ServiceMonitor's job

	By("serving the Prometheus Operator's kinds, and creating a Memcached with its alerts on")
	// A cluster with the Prometheus Operator keeps its own CRDs, and its objects.
	if _, err := kubectlOut("get", "crd", "servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"); err != nil {
		kubectl("apply", "-f", "tests/e2e/testdata/monitoring-crds.yaml")
		DeferCleanup(func() {
			_, _ = kubectlOut("delete", "-f", "tests/e2e/testdata/monitoring-crds.yaml", "--ignore-not-found")
		})
	}
	kubectl("create", "namespace", ns)
	DeferCleanup(deleteNamespace, ns)
	Expect(k8s.Create(ctx(), &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
		Spec: cachev1.MemcachedSpec{
			ReplicaCount: ptr.To[int32](1),
			Memcached:    &cachev1.MemcachedServer{MaxMemoryMB: 16},
			Metrics: &cachev1.MetricsSpec{Enabled: ptr.To(true),
				ServiceMonitor: &cachev1.ServiceMonitorSpec{Enabled: ptr.To(true), Interval: "5s"},
				PrometheusRule: &cachev1.PrometheusRuleSpec{Enabled: ptr.To(true),
					For: &cachev1.AlertDurations{Down: "1m", Evictions: "10s", Connections: "1m", HitRatio: "15m"}}},
		}})).To(Succeed())
	// The operator sees the new kinds within its capabilities' TTL (30s): until then the release
	// fails, saying the cluster serves no PrometheusRule, and is retried.
	Eventually(func(g Gomega) metav1.ConditionStatus {
		return memcachedConditionOf(g, key, "Deployed").Status
	}, timeout, poll).Should(Equal(metav1.ConditionTrue))
	Eventually(runningPodsIn(ns, map[string]string{"app.kubernetes.io/instance": key.Name}), timeout, poll).Should(HaveLen(1))

	By("starting Prometheus on the shipped rules, scraping the exporter and the operator")
	dir := GinkgoT().TempDir()
	rule := &unstructured.Unstructured{}
	rule.SetAPIVersion("monitoring.coreos.com/v1")
	rule.SetKind("PrometheusRule")
	Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: ns, Name: job}, rule)).To(Succeed())
	writeRuleFile(filepath.Join(dir, "memcached-rules.yaml"), rule.Object)
	operatorRules := map[string]any{}
	raw, err := os.ReadFile(filepath.Join(root, "config", "prometheus", "rules.yaml"))
	Expect(err).NotTo(HaveOccurred())
	Expect(yaml.Unmarshal(raw, &operatorRules)).To(Succeed())
	writeRuleFile(filepath.Join(dir, "operator-rules.yaml"), operatorRules)
	// The operator's metrics endpoint authorizes each scrape: a token of an account that may read it.
	kubectl("-n", ns, "create", "serviceaccount", "prometheus")
	_, _ = kubectlOut("delete", "clusterrolebinding", "memcached-e2e-prometheus", "--ignore-not-found") // an aborted run's
	kubectl("create", "clusterrolebinding", "memcached-e2e-prometheus", "--clusterrole=memcached-operator-metrics-reader", "--serviceaccount="+ns+":prometheus")
	DeferCleanup(func() {
		_, _ = kubectlOut("delete", "clusterrolebinding", "memcached-e2e-prometheus", "--ignore-not-found")
	})
	token := strings.TrimSpace(kubectl("-n", ns, "create", "token", "prometheus", "--duration=1h"))
	Expect(os.WriteFile(filepath.Join(dir, "token"), []byte(token), 0o600)).To(Succeed())
	// Prometheus scrapes what the chart's ServiceMonitor names: its Service, by the selector, at
	// its port.
	monitor := &unstructured.Unstructured{}
	monitor.SetAPIVersion("monitoring.coreos.com/v1")
	monitor.SetKind("ServiceMonitor")
	Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: ns, Name: job}, monitor)).To(Succeed())
	selector, _, _ := unstructured.NestedStringMap(monitor.Object, "spec", "selector", "matchLabels")
	endpoints, _, _ := unstructured.NestedSlice(monitor.Object, "spec", "endpoints")
	Expect(selector).NotTo(BeEmpty())
	Expect(endpoints).To(HaveLen(1))
	port, _ := endpoints[0].(map[string]any)["port"].(string)
	svc := &corev1.Service{}
	Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: ns, Name: job}, svc)).To(Succeed())
	for k, v := range selector {
		Expect(svc.Labels).To(HaveKeyWithValue(k, v), "the ServiceMonitor selects the Service")
	}
	Expect(svc.Spec.Ports).To(ContainElement(HaveField("Name", port)), "the ServiceMonitor's port is the Service's")
	Expect(os.WriteFile(filepath.Join(dir, "prometheus.yaml"), []byte(prometheusConfig(ns, svc.Name, port)), 0o644)).To(Succeed())
	api := startPrometheus(prometheus, dir)
	Eventually(func(g Gomega) []string {
		var data struct {
			Groups []struct {
				Rules []struct{ Name, Health, LastError string }
			}
		}
		promAPI(g, api, "/api/v1/rules", nil, &data)
		var rules []string
		for _, grp := range data.Groups {
			for _, r := range grp.Rules {
				rules = append(rules, r.Name+" "+r.Health+r.LastError)
			}
		}
		return rules
	}, time.Minute, poll).Should(ConsistOf(
		"MemcachedDown ok", "MemcachedUnavailable ok", "MemcachedEvictionsSustained ok", "MemcachedConnectionsNearLimit ok",
		"MemcachedHitRatioCollapsed ok", "MemcachedOperatorDown ok", "MemcachedOperatorReconcileErrors ok", "MemcachedReleaseFailed ok",
		"MemcachedCertificateExpiresSoon ok"),
		"every shipped rule loads and evaluates without error")
	Eventually(func(g Gomega) map[string]string {
		var targets struct {
			ActiveTargets []struct {
				Labels    map[string]string
				Health    string
				LastError string
			}
		}
		promAPI(g, api, "/api/v1/targets", nil, &targets)
		health := map[string]string{}
		for _, t := range targets.ActiveTargets {
			health[t.Labels["job"]] = t.Health + t.LastError
		}
		return health
	}, timeout, poll).Should(And(HaveKeyWithValue(job, "up"),
		HaveKeyWithValue("memcached-operator-controller-manager-metrics-service", "up")))

	By("overfilling the cache: MemoryPressure with its Event, the operator's gauge, the alert firing")
	addr := fmt.Sprintf("%s.%s.svc.cluster.local:11211", job, ns)
	load := probePod(ns, "load", "-addr", addr, "-value-size", "100000", "-interval", "20ms", "-wait-ready", "1m")
	Expect(k8s.Create(ctx(), load)).To(Succeed())
	Eventually(func(g Gomega) cachev1.HelmCondition {
		return memcachedConditionOf(g, key, "MemoryPressure")
	}, timeout, poll).Should(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "Evicting")))
	Eventually(eventReasonsOf(ns, key.Name), timeout, poll).Should(ContainElement("MemoryPressure"))
	Eventually(func(g Gomega) []string {
		return promQuery(g, api, fmt.Sprintf(`memcached_operator_operand_evictions_per_second{memcached_namespace=%q, memcached=%q} > 0`, ns, key.Name))
	}, timeout, poll).ShouldNot(BeEmpty(), "the operator's gauge, as Prometheus scraped it")
	Eventually(alertState(api, "MemcachedEvictionsSustained", ns), timeout, poll).Should(Equal("firing"))
	Expect(alertState(api, "MemcachedDown", ns)(Default)).To(BeEmpty(), "the pod serves all along")
	Expect(alertState(api, "MemcachedOperatorDown", "")(Default)).To(BeEmpty(), "the operator is scraped")

	By("stopping the load: MemoryPressure clears with its Event, and the alert resolves")
	Expect(k8s.Delete(ctx(), load)).To(Succeed())
	Eventually(func(g Gomega) metav1.ConditionStatus {
		return memcachedConditionOf(g, key, "MemoryPressure").Status
	}, timeout, poll).Should(Equal(metav1.ConditionFalse))
	Eventually(eventReasonsOf(ns, key.Name), timeout, poll).Should(ContainElement("MemoryPressureRelieved"))
	// The alert reads the evictions' rate over ruleWindow: it resolves when that window is quiet.
	Eventually(alertState(api, "MemcachedEvictionsSustained", ns), 3*time.Minute, 5*time.Second).Should(BeEmpty())
}

// prometheusConfig scrapes what the chart's ServiceMonitor names, labelled as the Prometheus
// Operator labels it (namespace, job: the Service, pod), and the operator's metrics Service over
// HTTPS with the token; every 5 seconds, with the rules evaluated as often.
func prometheusConfig(ns, service, port string) string {
	sd := func(namespace string) string {
		return fmt.Sprintf(`  kubernetes_sd_configs:
  - role: endpoints
    kubeconfig_file: %q
    namespaces: {names: [%q]}
`, os.Getenv("KUBECONFIG"), namespace)
	}
	relabel := func(service, port string) string {
		return fmt.Sprintf(`  relabel_configs:
  - {source_labels: [__meta_kubernetes_service_name], regex: %q, action: keep}
  - {source_labels: [__meta_kubernetes_endpoint_port_name], regex: %q, action: keep}
  - {source_labels: [__meta_kubernetes_namespace], target_label: namespace}
  - {source_labels: [__meta_kubernetes_service_name], target_label: job}
  - {source_labels: [__meta_kubernetes_pod_name], target_label: pod}
`, service, port)
	}
	return `global: {scrape_interval: 5s, evaluation_interval: 5s}
rule_files: [memcached-rules.yaml, operator-rules.yaml]
scrape_configs:
- job_name: memcached
` + sd(ns) + relabel(service, port) + `- job_name: operator
  scheme: https
  tls_config: {insecure_skip_verify: true}
  authorization: {credentials_file: token}
` + sd(operatorNamespace) + relabel("memcached-operator-controller-manager-metrics-service", "https")
}

// writeRuleFile writes a PrometheusRule's spec: a Prometheus rule file, with the rates' 5-minute
// windows read as 30 s (the test's setting). Once a load stops, the evictions alert resolves when
// its window is quiet: 30 s here instead of 5 minutes, the same behaviour; promtool's tests
// (tests/monitoring) hold the shipped 5-minute windows to their meaning (a burst that a quiet
// window forgets).
func writeRuleFile(file string, rule map[string]any) {
	raw, err := yaml.Marshal(rule["spec"])
	Expect(err).NotTo(HaveOccurred())
	Expect(string(raw)).To(ContainSubstring("[5m]"), "the rules still read 5-minute rates: see what this test shortens")
	raw = []byte(strings.ReplaceAll(string(raw), "[5m]", "["+ruleWindow+"]"))
	Expect(os.WriteFile(file, raw, 0o644)).To(Succeed())
}

// ruleWindow is the rates' window in the rules Prometheus evaluates here: 6 scrapes.
const ruleWindow = "30s"

// startPrometheus runs Prometheus in dir on a free loopback port until the spec ends, and returns
// its address.
func startPrometheus(bin, dir string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	api := "http://" + l.Addr().String()
	Expect(l.Close()).To(Succeed())
	cmd := exec.Command(bin, "--config.file=prometheus.yaml", "--storage.tsdb.path=data",
		"--web.listen-address="+strings.TrimPrefix(api, "http://"), "--log.level=warn")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // also when the suite dies
	Expect(cmd.Start()).To(Succeed())
	DeferCleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	Eventually(func() error {
		resp, err := promClient.Get(api + "/-/ready")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("%s", resp.Status)
			}
		}
		return err
	}, time.Minute, poll).Should(Succeed())
	return api
}

// promClient gives up on a request that hangs, so that Eventually tries again.
var promClient = &http.Client{Timeout: 10 * time.Second}

// promAPI reads a Prometheus API path into data.
func promAPI(g Gomega, api, path string, query url.Values, data any) {
	resp, err := promClient.Get(api + path + "?" + query.Encode())
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		Status string
		Error  string
		Data   json.RawMessage
	}
	g.Expect(json.NewDecoder(resp.Body).Decode(&body)).To(Succeed())
	g.Expect(body.Status).To(Equal("success"), body.Error)
	g.Expect(json.Unmarshal(body.Data, data)).To(Succeed())
}

// promQuery returns the series of an instant query, each as its labels.
func promQuery(g Gomega, api, expr string) []string {
	var data struct {
		Result []struct{ Metric map[string]string }
	}
	promAPI(g, api, "/api/v1/query", url.Values{"query": {expr}}, &data)
	var out []string
	for _, r := range data.Result {
		out = append(out, fmt.Sprint(r.Metric))
	}
	return out
}

// alertState is the state (pending, firing) of an alert of namespace ns ("": any), "" if none.
func alertState(api, name, ns string) func(g Gomega) string {
	return func(g Gomega) string {
		var data struct {
			Alerts []struct {
				Labels map[string]string
				State  string
			}
		}
		promAPI(g, api, "/api/v1/alerts", nil, &data)
		for _, a := range data.Alerts {
			if a.Labels["alertname"] == name && (ns == "" || a.Labels["namespace"] == ns) {
				return a.State
			}
		}
		return ""
	}
}

// memcachedConditionOf is a condition of a Memcached (empty when it has none of that type).
func memcachedConditionOf(g Gomega, key types.NamespacedName, typ string) cachev1.HelmCondition {
	mc := &cachev1.Memcached{}
	g.Expect(k8s.Get(ctx(), key, mc)).To(Succeed())
	for _, c := range mc.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return cachev1.HelmCondition{}
}

// eventReasonsOf are the reasons of the Events on the Memcached name in ns.
func eventReasonsOf(ns, name string) func() []string {
	return func() []string {
		return strings.Fields(kubectl("-n", ns, "get", "events", "--field-selector", "involvedObject.name="+name,
			"-o", "jsonpath={.items[*].reason}"))
	}
}
