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

package controllers_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// The chart is the trust boundary between a tenant's CR and what the operator creates with its
// own rights. Admission refuses bad values, but the chart must not depend on it: whatever a value
// holds, it lands as data in the one place the chart means, and never adds an object, a field or
// a flag. This property test renders the chart with admission's checks off (values.schema.json
// skipped), adversarial strings in every string field of the schema and random numbers in every
// number field, and checks the rendered objects field by field.

// adversarial are strings that change YAML or templates when they reach a template unquoted.
func adversarial() []string {
	return []string{
		"1\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: injected\n  namespace: kube-system\n",
		"x\n      hostNetwork: true\n      hostPID: true",
		"x\n  - --privileged",
		"{{ .Release.Name }}", `{{ fail "templated" }}`,
		`"double" 'single' ` + "`back`", "key: value", ": colon", "- dash", "#comment", "&anchor *alias", "!!binary AAAA",
		"true", "null", "~", "0x10", "1e3", "yes", "", " ", "\t",
		"ünïcødé ✓ 日本語 \u2028 \u0085", "nul\x00byte", "back\\slash\\n",
		strings.Repeat("long-", 20*1024), // 100 KB
		strings.Repeat("a\n", 1024),
	}
}

// valuesFor makes chart values from a values.schema.json node: an adversarial string for every
// string (int-or-string too), a random number for every integer, every object property and a few
// map entries and list items. Booleans are on, so that every template renders.
func valuesFor(node map[string]any, rnd *rand.Rand, strs []string) any {
	pick := func() string { return strs[rnd.IntN(len(strs))] }
	if anyOf, ok := node["anyOf"].([]any); ok && len(anyOf) > 0 {
		return pick() // int-or-string: the string is the dangerous half
	}
	switch node["type"] {
	case "string":
		return pick()
	case "integer":
		return rnd.Int64N(2_000_000_000) - 1_000_000_000
	case "boolean":
		return true
	case "array":
		items, _ := node["items"].(map[string]any)
		var out []any
		for range 1 + rnd.IntN(3) {
			out = append(out, valuesFor(items, rnd, strs))
		}
		return out
	case "object":
		out := map[string]any{}
		props, _ := node["properties"].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(props)) {
			out[name] = valuesFor(props[name].(map[string]any), rnd, strs)
		}
		if extra, ok := node["additionalProperties"].(map[string]any); ok {
			for range 1 + rnd.IntN(3) {
				out[pick()+fmt.Sprint(rnd.IntN(1000))] = valuesFor(extra, rnd, strs)
			}
		}
		return out
	}
	panic(fmt.Sprintf("schema node of unknown type: %v", node))
}

func TestChartCannotBeSteeredByValues(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "helm-charts", "memcached", "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	chrt, err := loader.Load(filepath.Join(repoRoot(), "helm-charts", "memcached"))
	if err != nil {
		t.Fatal(err)
	}
	// The attacks as reported, alone: a second object in another namespace, host fields in the pod.
	for _, attack := range []map[string]any{
		{"podDisruptionBudget": map[string]any{"maxUnavailable": "1\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: kube-system"}},
		{"priorityClassName": "x\n      hostNetwork: true\n      hostPID: true"},
		{"imagePullSecrets": []any{map[string]any{"name": "x\n      hostNetwork: true"}}},
	} {
		vals := valuesFor(schema, rand.New(rand.NewPCG(0, 0)), []string{"x"}).(map[string]any)
		maps.Copy(vals, attack)
		manifest, err := renderUnchecked(chrt, vals)
		if err != nil {
			t.Fatalf("attack %v: the chart does not render it: %v", attack, err)
		}
		for _, problem := range checkRendered(manifest, vals) {
			t.Errorf("attack %v: %s", attack, problem)
		}
	}

	strs := adversarial()
	const runs = 60
	for seed := range uint64(runs) {
		rnd := rand.New(rand.NewPCG(seed, 2026))
		vals := valuesFor(schema, rnd, strs).(map[string]any)
		manifest, err := renderUnchecked(chrt, vals)
		if err != nil {
			t.Fatalf("seed %d: the chart does not render these values (a value broke a template): %v", seed, err)
		}
		for _, problem := range checkRendered(manifest, vals) {
			t.Errorf("seed %d: %s", seed, problem)
		}
		if t.Failed() {
			dump, _ := json.MarshalIndent(vals, "", "  ")
			t.Logf("seed %d values (strings shortened):\n%.4000s", seed, dump)
			return
		}
	}
}

// renderUnchecked renders like renderChart, but without values.schema.json, on a cluster with
// the Prometheus Operator's APIs.
func renderUnchecked(chrt *chart.Chart, vals map[string]any) (string, error) {
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.SkipSchemaValidation = true
	install.ReleaseName, install.Namespace = releaseName, chartNamespace
	install.KubeVersion = &chartutil.KubeVersion{Version: "v1.35.4", Major: "1", Minor: "35"}
	install.APIVersions = chartutil.VersionSet{"monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule"}
	rel, err := install.Run(chrt, vals)
	if err != nil {
		return "", err
	}
	return rel.Manifest, nil
}

const releaseName = "memcached-sample"

// podSpecFields and containerFields are what the chart means to set in a pod; anything else in a
// rendered pod came from a value.
var (
	podSpecFields   = []string{"affinity", "automountServiceAccountToken", "containers", "imagePullSecrets", "nodeSelector", "priorityClassName", "securityContext", "serviceAccountName", "tolerations", "volumes"}
	containerFields = []string{"args", "image", "imagePullPolicy", "lifecycle", "livenessProbe", "name", "ports", "readinessProbe", "resources", "securityContext", "volumeMounts"}
)

// renderedObjects are the objects the chart means to render with every feature on, by kind and
// name: each named after the release.
var renderedObjects = []string{
	"ConfigMap/" + releaseName + "-servers", "NetworkPolicy/" + releaseName, "PodDisruptionBudget/" + releaseName,
	"PrometheusRule/" + releaseName, "Service/" + releaseName, "Service/" + releaseName + "-headless",
	"ServiceAccount/" + releaseName, "ServiceMonitor/" + releaseName, "StatefulSet/" + releaseName,
}

// checkRendered lists how the rendered manifest differs from what the chart means to render for
// vals: exactly its objects (renderedObjects), in the release's namespace, each value as data in
// its place.
func checkRendered(manifest string, vals map[string]any) []string {
	var problems []string
	objs := map[string]map[string]any{}
	for _, doc := range releaseutil.SplitManifests(manifest) {
		var obj map[string]any
		if err := sigsyaml.Unmarshal([]byte(doc), &obj); err != nil {
			problems = append(problems, fmt.Sprintf("a rendered document is not YAML: %v", err))
			continue
		}
		if len(obj) == 0 {
			continue
		}
		kind, _ := obj["kind"].(string)
		md, _ := obj["metadata"].(map[string]any)
		if ns, ok := md["namespace"]; ok {
			problems = append(problems, fmt.Sprintf("%s %v sets namespace %q: every object belongs in the release's namespace", kind, md["name"], ns))
		}
		key := fmt.Sprintf("%s/%v", kind, md["name"])
		if _, dup := objs[key]; dup {
			problems = append(problems, "a second "+key+" was rendered")
		}
		objs[key] = obj
	}
	if got := slices.Sorted(maps.Keys(objs)); !slices.Equal(got, renderedObjects) {
		problems = append(problems, fmt.Sprintf("rendered %v, want exactly %v", got, renderedObjects))
	}
	if d, ok := objs["StatefulSet/"+releaseName]; ok {
		problems = append(problems, checkServers(d, vals)...)
	}
	if pdb, ok := objs["PodDisruptionBudget/"+releaseName]; ok {
		var typed policyv1.PodDisruptionBudget
		if err := strictDecode(pdb, &typed); err != nil {
			problems = append(problems, "PodDisruptionBudget: "+err.Error())
		} else if got, want := typed.Spec.MaxUnavailable.String(), fmt.Sprint(dig(vals, "podDisruptionBudget", "maxUnavailable")); got != want {
			problems = append(problems, fmt.Sprintf("PodDisruptionBudget maxUnavailable %.80q, want the value %.80q", got, want))
		}
	}
	if svc, ok := objs["Service/"+releaseName]; ok {
		var typed corev1.Service
		if err := strictDecode(svc, &typed); err != nil {
			problems = append(problems, "Service: "+err.Error())
		} else if len(typed.Spec.Ports) != 2 {
			problems = append(problems, fmt.Sprintf("Service has %d ports, want memcache and metrics", len(typed.Spec.Ports)))
		}
	}
	if svc, ok := objs["Service/"+releaseName+"-headless"]; ok {
		var typed corev1.Service
		if err := strictDecode(svc, &typed); err != nil {
			problems = append(problems, "headless Service: "+err.Error())
		} else if len(typed.Spec.Ports) != 1 || typed.Spec.ClusterIP != corev1.ClusterIPNone {
			problems = append(problems, fmt.Sprintf("the headless Service has clusterIP %q and %d ports, want None and memcache", typed.Spec.ClusterIP, len(typed.Spec.Ports)))
		}
	}
	if cm, ok := objs["ConfigMap/"+releaseName+"-servers"]; ok {
		var typed corev1.ConfigMap
		if err := strictDecode(cm, &typed); err != nil {
			problems = append(problems, "ConfigMap: "+err.Error())
		} else if got := slices.Sorted(maps.Keys(typed.Data)); !slices.Equal(got, []string{"MEMCACHED_SERVERS", "MEMCACHED_SRV", "MEMCACHED_TLS", "MEMCACHED_TLS_SECRET", "MEMCACHED_TLS_SERVER_NAME"}) {
			problems = append(problems, fmt.Sprintf("the server list ConfigMap holds %v", got))
		}
	}
	if np, ok := objs["NetworkPolicy/"+releaseName]; ok {
		problems = append(problems, checkNetworkPolicy(np, vals)...)
	}
	if sm, ok := objs["ServiceMonitor/"+releaseName]; ok {
		endpoints, _ := dig(sm, "spec", "endpoints").([]any)
		if len(endpoints) != 1 || dig(endpoints[0], "interval") != dig(vals, "metrics", "serviceMonitor", "interval") {
			problems = append(problems, fmt.Sprintf("ServiceMonitor endpoints %.200v, want one with the interval value", endpoints))
		}
	}
	if rule, ok := objs["PrometheusRule/"+releaseName]; ok {
		problems = append(problems, checkPrometheusRule(rule, vals)...)
	}
	return problems
}

// checkPrometheusRule: the chart's five alerts, each value in its place: the durations as they
// are, the runbook URL with braces encoded, since Prometheus runs annotations as templates.
func checkPrometheusRule(obj map[string]any, vals map[string]any) []string {
	var problems []string
	groups, _ := dig(obj, "spec", "groups").([]any)
	if len(groups) != 1 {
		return []string{fmt.Sprintf("PrometheusRule has %d groups, want 1", len(groups))}
	}
	rules, _ := dig(groups[0], "rules").([]any)
	forOf := map[string]string{"MemcachedDown": "down", "MemcachedUnavailable": "down", "MemcachedEvictionsSustained": "evictions",
		"MemcachedConnectionsNearLimit": "connections", "MemcachedHitRatioCollapsed": "hitRatio"}
	url := strings.NewReplacer("{", "%7B", "}", "%7D").Replace(strings.TrimSuffix(fmt.Sprint(dig(vals, "metrics", "prometheusRule", "runbookURL")), "/"))
	seen := 0
	for _, r := range rules {
		alert, _ := dig(r, "alert").(string)
		key, known := forOf[alert]
		if !known {
			problems = append(problems, fmt.Sprintf("PrometheusRule has an alert %.80q the chart does not define", alert))
			continue
		}
		seen++
		if got, want := dig(r, "for"), dig(vals, "metrics", "prometheusRule", "for", key); got != want {
			problems = append(problems, fmt.Sprintf("alert %s for %.80q, want the value %.80q", alert, got, want))
		}
		if got, want := dig(r, "annotations", "runbook_url"), url+"/"+alert+".md"; got != want {
			problems = append(problems, fmt.Sprintf("alert %s runbook_url %.80q, want %.80q", alert, got, want))
		}
		if extra := extraKeys(r.(map[string]any), []string{"alert", "annotations", "expr", "for", "labels"}); len(extra) > 0 {
			problems = append(problems, fmt.Sprintf("alert %s has fields the chart does not set: %v", alert, extra))
		}
	}
	if seen != len(forOf) {
		problems = append(problems, fmt.Sprintf("PrometheusRule has %d of the chart's %d alerts", seen, len(forOf)))
	}
	return problems
}

func checkServers(obj map[string]any, vals map[string]any) []string {
	var problems []string
	pod, _ := dig(obj, "spec", "template", "spec").(map[string]any)
	if extra := extraKeys(pod, podSpecFields); len(extra) > 0 {
		problems = append(problems, fmt.Sprintf("the pod spec has fields the chart does not set: %v", extra))
	}
	containers, _ := pod["containers"].([]any)
	for _, c := range containers {
		if extra := extraKeys(c.(map[string]any), containerFields); len(extra) > 0 {
			problems = append(problems, fmt.Sprintf("container %v has fields the chart does not set: %v", dig(c, "name"), extra))
		}
	}
	// resources are the value as it is, whatever its quantities hold (the API server checks
	// those); taken out before the typed decode, which would parse them.
	if len(containers) > 0 {
		memcached := containers[0].(map[string]any)
		want := map[string]any{} // its limits and requests: the chart sets no resource claims
		for _, k := range []string{"limits", "requests"} {
			if v, ok := dig(vals, "resources", k).(map[string]any); ok && len(v) > 0 {
				want[k] = v
			}
		}
		if !reflect.DeepEqual(memcached["resources"], want) {
			problems = append(problems, fmt.Sprintf("memcached resources %.200v, want the value", memcached["resources"]))
		}
		delete(memcached, "resources")
	}
	var d appsv1.StatefulSet
	if err := strictDecode(obj, &d); err != nil {
		return append(problems, "StatefulSet: "+err.Error())
	}
	if got, want := int64(d.Spec.MinReadySeconds), vals["minReadySeconds"]; got != want {
		problems = append(problems, fmt.Sprintf("minReadySeconds %d, want the value %v", got, want))
	}
	spec := d.Spec.Template.Spec
	if got := len(spec.Containers); got != 2 {
		return append(problems, fmt.Sprintf("%d containers, want memcached and exporter", got))
	}
	if spec.PriorityClassName != vals["priorityClassName"] {
		problems = append(problems, fmt.Sprintf("priorityClassName %.80q, want the value %.80q", spec.PriorityClassName, vals["priorityClassName"]))
	}
	if !sameStrings(spec.NodeSelector, vals["nodeSelector"]) {
		problems = append(problems, fmt.Sprintf("nodeSelector %.200v, want the value", spec.NodeSelector))
	}
	if !sameStrings(d.Spec.Template.Annotations, vals["podAnnotations"]) {
		problems = append(problems, fmt.Sprintf("pod annotations %.200v, want the value", d.Spec.Template.Annotations))
	}
	for k, v := range vals["podLabels"].(map[string]any) {
		if d.Spec.Template.Labels[k] != v {
			problems = append(problems, fmt.Sprintf("pod label %.80q is %.80q, want %.80q", k, d.Spec.Template.Labels[k], v))
		}
	}
	secrets, _ := vals["imagePullSecrets"].([]any)
	if len(spec.ImagePullSecrets) != len(secrets) {
		problems = append(problems, fmt.Sprintf("%d image pull secrets, want the %d of the value", len(spec.ImagePullSecrets), len(secrets)))
	} else {
		for i, ref := range spec.ImagePullSecrets {
			if want := dig(secrets[i].(map[string]any), "name"); ref.Name != want {
				problems = append(problems, fmt.Sprintf("image pull secret %.80q, want the value %.80q", ref.Name, want))
			}
		}
	}
	if tol, _ := vals["tolerations"].([]any); len(spec.Tolerations) != len(tol) {
		problems = append(problems, fmt.Sprintf("%d tolerations, want the %d of the value", len(spec.Tolerations), len(tol)))
	}
	extraArgs, _ := dig(vals, "memcached", "extraArgs").([]any)
	args := spec.Containers[0].Args
	loopback := []string{"-l", "notls:127.0.0.1:11212,*"} // the exporter's listener
	if len(args) != 10+len(extraArgs)+3+len(loopback) {
		problems = append(problems, fmt.Sprintf("memcached has %d args, want the chart's 10, %d extraArgs, TLS's 3 and the loopback listener's %d", len(args), len(extraArgs), len(loopback)))
	} else {
		for i, a := range extraArgs {
			if args[10+i] != a {
				problems = append(problems, fmt.Sprintf("extra arg %d is %.80q, want %.80q", i, args[10+i], a))
			}
		}
		problems = append(problems, checkTLSOptions(args[10+len(extraArgs):10+len(extraArgs)+3])...)
		if tail := args[10+len(extraArgs)+3:]; !slices.Equal(tail, loopback) {
			problems = append(problems, fmt.Sprintf("memcached's last args are %.80q, want %q", tail, loopback))
		}
	}
	for _, v := range spec.Volumes {
		ours := v.Secret != nil && strings.HasPrefix(v.Secret.SecretName, releaseName+"-") && strings.HasSuffix(v.Secret.SecretName, "tls")
		theirs, _ := dig(vals, "tls", "certificateSecret").(string)
		if !ours && !(v.Name == "tls" && projectsTheirCertificate(v.Projected, theirs, releaseName)) {
			problems = append(problems, fmt.Sprintf("volume %.80q %.200v is not a TLS Secret of the release, nor the user's certificate beside the release's CA certificate", v.Name, v.VolumeSource))
		}
	}
	for _, c := range spec.Containers {
		if c.SecurityContext == nil || c.SecurityContext.Privileged != nil || c.SecurityContext.Capabilities == nil ||
			len(c.SecurityContext.Capabilities.Add) > 0 || len(c.Ports) != 1 {
			problems = append(problems, fmt.Sprintf("container %s: security context %+v, ports %v", c.Name, c.SecurityContext, c.Ports))
		}
	}
	return problems
}

// projectsTheirCertificate: the Secret the value tls.certificateSecret names, its tls.crt and
// tls.key alone, and the ca.crt alone of the release's CA Secret (never its key).
func projectsTheirCertificate(p *corev1.ProjectedVolumeSource, theirs, releaseName string) bool {
	if p == nil || len(p.Sources) != 2 || theirs == "" {
		return false
	}
	items := func(src corev1.VolumeProjection) []string {
		var out []string
		for _, it := range src.Secret.Items {
			out = append(out, it.Key+"="+it.Path)
		}
		return out
	}
	user, ca := p.Sources[0], p.Sources[1]
	return user.Secret != nil && user.Secret.Name == theirs && slices.Equal(items(user), []string{"tls.crt=tls.crt", "tls.key=tls.key"}) &&
		ca.Secret != nil && strings.HasPrefix(ca.Secret.Name, releaseName+"-") && strings.HasSuffix(ca.Secret.Name, "-ca") &&
		slices.Equal(items(ca), []string{"ca.crt=ca.crt"})
}

// checkTLSOptions: -Z and one -o of memcached's TLS options alone, whatever the values held
// (memcached splits its options at commas).
func checkTLSOptions(args []string) []string {
	if args[0] != "-Z" || args[1] != "-o" {
		return []string{fmt.Sprintf("memcached's TLS args %.200q, want -Z -o <options>", args)}
	}
	var problems []string
	allowed := []string{"ssl_chain_cert", "ssl_key", "ssl_ca_cert", "ssl_verify_mode", "ssl_min_version", "ssl_ciphers"}
	for _, opt := range strings.Split(args[2], ",") {
		name, value, _ := strings.Cut(opt, "=")
		if !slices.Contains(allowed, name) || (name == "ssl_min_version" && value != "2" && value != "3") {
			problems = append(problems, fmt.Sprintf("memcached's TLS options hold %.120q", opt))
		}
	}
	return problems
}

// checkNetworkPolicy: memcached's port from the release's namespace, the operator and each
// allowed client as given; the exporter's from the metrics namespace.
func checkNetworkPolicy(obj map[string]any, vals map[string]any) []string {
	var np networkingv1.NetworkPolicy
	if err := strictDecode(obj, &np); err != nil {
		return []string{"NetworkPolicy: " + err.Error()}
	}
	var problems []string
	clients, _ := dig(vals, "networkPolicy", "allowedClients").([]any)
	if len(np.Spec.Ingress) != 2 {
		return []string{fmt.Sprintf("NetworkPolicy has %d ingress rules, want memcached's and the exporter's", len(np.Spec.Ingress))}
	}
	from := np.Spec.Ingress[0].From
	operator := 0 // the operator's peer, when the operator says where it runs
	if vals["operatorNamespace"] != "" {
		operator = 1
	}
	if len(from) != 1+operator+len(clients) {
		return append(problems, fmt.Sprintf("memcached's port is open to %d peers, want the namespace, %d of the operator and %d allowed clients", len(from), operator, len(clients)))
	}
	if operator == 1 {
		if got := from[1].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]; got != vals["operatorNamespace"] {
			problems = append(problems, fmt.Sprintf("the operator's peer is namespace %.80q, want %.80q", got, vals["operatorNamespace"]))
		}
	}
	for i, c := range clients {
		want, _ := dig(c, "namespaceSelector", "matchLabels").(map[string]any)
		if got := from[1+operator+i].NamespaceSelector; got == nil || !sameStrings(got.MatchLabels, want) {
			problems = append(problems, fmt.Sprintf("allowed client %d's namespaceSelector %.200v, want the value", i, got))
		}
	}
	metricsNamespace := dig(vals, "networkPolicy", "metricsNamespace")
	if metricsNamespace == "" {
		metricsNamespace = "monitoring" // the platform's, off OpenShift
	}
	if got := np.Spec.Ingress[1].From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]; got != metricsNamespace {
		problems = append(problems, fmt.Sprintf("the exporter is open to namespace %.80q, want %.80q", got, metricsNamespace))
	}
	return problems
}

// strictDecode decodes a rendered object into its Go type, refusing unknown fields.
func strictDecode(obj map[string]any, into any) error {
	raw, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

func extraKeys(m map[string]any, allowed []string) []string {
	var extra []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	return extra
}

func sameStrings(got map[string]string, want any) bool {
	w, _ := want.(map[string]any)
	if len(got) != len(w) {
		return false
	}
	for k, v := range w {
		if got[k] != v {
			return false
		}
	}
	return true
}

// dig follows keys through nested maps.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
