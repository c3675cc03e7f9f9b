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
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// renderedAs converts the one rendered object of kind (and name, if given) into out.
func renderedAs(t *testing.T, objs []*unstructured.Unstructured, kind, name string, out any) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, out); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("the chart renders no %s %s", kind, name)
}

// memcached runs as servers with stable names: a StatefulSet governed by a headless Service that
// lists every server, ready or not (SRV of the memcache port), rolled one server at a time after
// minReadySeconds; the server list is in a ConfigMap and the NOTES, and the load-balanced Service
// of earlier releases stays.
func TestChartRunsServersWithStableNames(t *testing.T) {
	objs := renderChart(t, map[string]any{"replicaCount": 3, "minReadySeconds": 20})
	var servers appsv1.StatefulSet
	renderedAs(t, objs, "StatefulSet", "", &servers)
	if servers.Name != "memcached-sample" || servers.Spec.ServiceName != "memcached-sample-headless" {
		t.Errorf("StatefulSet %s governed by %s, want memcached-sample governed by memcached-sample-headless", servers.Name, servers.Spec.ServiceName)
	}
	if servers.Spec.MinReadySeconds != 20 || servers.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType ||
		servers.Spec.UpdateStrategy.RollingUpdate != nil || servers.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("StatefulSet rolls with %+v, minReadySeconds %d, %s: want one server at a time after minReadySeconds, scaled in parallel",
			servers.Spec.UpdateStrategy, servers.Spec.MinReadySeconds, servers.Spec.PodManagementPolicy)
	}

	var headless corev1.Service
	renderedAs(t, objs, "Service", "memcached-sample-headless", &headless)
	if headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("the governing Service has clusterIP %q, publishNotReadyAddresses %v: want headless, listing servers not ready too",
			headless.Spec.ClusterIP, headless.Spec.PublishNotReadyAddresses)
	}
	if len(headless.Spec.Ports) != 1 || headless.Spec.Ports[0].Name != "memcache" || headless.Spec.Ports[0].Port != 11211 {
		t.Errorf("the governing Service's ports are %+v: want memcache at 11211, the servers' own port (SRV lists it)", headless.Spec.Ports)
	}
	for k, v := range servers.Spec.Selector.MatchLabels {
		if headless.Spec.Selector[k] != v {
			t.Errorf("the governing Service does not select the servers: %s=%s", k, v)
		}
	}
	var compat corev1.Service
	renderedAs(t, objs, "Service", "memcached-sample", &compat)
	if compat.Spec.ClusterIP == corev1.ClusterIPNone {
		t.Error("the Service of earlier releases (one address, load-balanced) must stay as it was: its clusterIP cannot change")
	}

	var list corev1.ConfigMap
	renderedAs(t, objs, "ConfigMap", "memcached-sample-servers", &list)
	want := []string{
		"memcached-sample-0.memcached-sample-headless.default.svc:11211",
		"memcached-sample-1.memcached-sample-headless.default.svc:11211",
		"memcached-sample-2.memcached-sample-headless.default.svc:11211",
	}
	if got := list.Data["MEMCACHED_SERVERS"]; got != strings.Join(want, ",") {
		t.Errorf("MEMCACHED_SERVERS = %q, want %q", got, strings.Join(want, ","))
	}
	if got := list.Data["MEMCACHED_SRV"]; got != "_memcache._tcp.memcached-sample-headless.default.svc" {
		t.Errorf("MEMCACHED_SRV = %q", got)
	}
}

// The NOTES, which the Deployed condition shows, name the image the servers were deployed from,
// not the chart's appVersion: an image set by spec.image or RELATED_IMAGE_MEMCACHED may hold
// another memcached (the Progressing condition says the version the servers report).
func TestChartNotesNameTheImage(t *testing.T) {
	kube := &chartutil.KubeVersion{Version: "v1.35.4", Major: "1", Minor: "35"}
	for _, tc := range []struct {
		values map[string]any
		want   string
	}{
		{map[string]any{"replicaCount": 1, "image": map[string]any{"repository": "registry.example/memcached", "tag": "1.6.18"}},
			"1 memcached server of image registry.example/memcached:1.6.18: memcached-sample-0.memcached-sample-headless.default.svc:11211\n"},
		{map[string]any{"replicaCount": 3, "image": map[string]any{"repository": "registry.example/memcached", "digest": "sha256:" + strings.Repeat("a", 64)}},
			"3 memcached servers of image registry.example/memcached@sha256:" + strings.Repeat("a", 64) + "; clients shard keys over the list\n"},
	} {
		notes := installDryRun(t, "memcached-sample", kube, tc.values).Info.Notes
		if !strings.HasPrefix(notes, tc.want) {
			t.Errorf("NOTES start %q, want %q", notes, tc.want)
		}
	}
}

// The names the chart derives from the longest Memcached name stay valid: a StatefulSet's pods
// carry <name>-<revision hash> (at most 63 characters), and the headless Service and the
// ConfigMap are DNS labels.
func TestChartServerNamesFitTheLongestMemcachedName(t *testing.T) {
	name := strings.Repeat("m", cachev1.MemcachedNameMaxLength) // its objects: <name>-memcached, cut at 63
	objs := renderChartNamed(t, name, map[string]any{"replicaCount": 2})
	var servers appsv1.StatefulSet
	renderedAs(t, objs, "StatefulSet", "", &servers)
	if n := len(servers.Name) + len("-") + 10; n > validation.LabelValueMaxLength {
		t.Errorf("StatefulSet %s: its pods' controller-revision-hash would have %d characters", servers.Name, n)
	}
	for _, n := range []string{servers.Spec.ServiceName, servers.Name + "-servers", fmt.Sprintf("%s-%d", servers.Name, 99)} {
		if errs := validation.IsDNS1035Label(n); len(errs) > 0 {
			t.Errorf("%s: %v", n, errs)
		}
	}
	var list corev1.ConfigMap
	renderedAs(t, objs, "ConfigMap", servers.Name+"-servers", &list)

	// Two longest names that differ only in their last letter keep servers of their own.
	other := renderChartNamed(t, name[:len(name)-1]+"n", map[string]any{"replicaCount": 2})
	var others appsv1.StatefulSet
	renderedAs(t, other, "StatefulSet", "", &others)
	if others.Name == servers.Name || others.Spec.ServiceName == servers.Spec.ServiceName {
		t.Errorf("Memcacheds %s and %s share StatefulSet %s (Service %s)", name, name[:len(name)-1]+"n", servers.Name, servers.Spec.ServiceName)
	}
}

// What lists or counts the servers selects the StatefulSet's pods only: a pod of a release before
// 1.2.0 (the Deployment's, which serves through the ClusterIP Service during the move) is not a
// server, in SRV, in the PodDisruptionBudget or to anti-affinity.
func TestChartServersAreTheStatefulSetsPodsOnly(t *testing.T) {
	objs := renderChart(t, map[string]any{"antiAffinity": "hard"})
	var servers appsv1.StatefulSet
	renderedAs(t, objs, "StatefulSet", "", &servers)
	// The labels every Deployment pod of 0.1.0 to 1.1.0 carried.
	oldPod := k8slabels.Set{"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "memcached-sample",
		"app.kubernetes.io/component": "cache", "app.kubernetes.io/part-of": "memcached-operator"}
	server := k8slabels.Set(servers.Spec.Template.Labels)

	var headless, service corev1.Service
	renderedAs(t, objs, "Service", servers.Spec.ServiceName, &headless)
	renderedAs(t, objs, "Service", "memcached-sample", &service)
	var pdb policyv1.PodDisruptionBudget
	renderedAs(t, objs, "PodDisruptionBudget", "", &pdb)
	anti := servers.Spec.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector
	for what, sel := range map[string]*metav1.LabelSelector{
		"headless Service":    {MatchLabels: headless.Spec.Selector},
		"PodDisruptionBudget": pdb.Spec.Selector,
		"anti-affinity":       anti,
	} {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !s.Matches(server) {
			t.Errorf("%s does not select the servers", what)
		}
		if s.Matches(oldPod) {
			t.Errorf("%s selects the pods of an earlier release's Deployment too", what)
		}
	}
	// The ClusterIP Service answers through the move: it selects both.
	s := k8slabels.SelectorFromSet(service.Spec.Selector)
	if !s.Matches(server) || !s.Matches(oldPod) {
		t.Errorf("Service %s selects %v: it must select the servers and the earlier release's pods", service.Name, service.Spec.Selector)
	}
}

// The chart lists at most 100 servers, the most replicaCount may be: so no value makes it loop
// for long (values reach the chart unchecked when its schema is off).
func TestChartServerListIsBoundedByTheSchema(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "helm-charts", "memcached", "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			ReplicaCount struct {
				Maximum int `json:"maximum"`
			} `json:"replicaCount"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Properties.ReplicaCount.Maximum != 100 {
		t.Errorf("replicaCount's maximum is %d; the chart's server list stops at 100 (templates/_helpers.tpl)", schema.Properties.ReplicaCount.Maximum)
	}
	var list corev1.ConfigMap
	renderedAs(t, renderChart(t, map[string]any{"replicaCount": 100}), "ConfigMap", "memcached-sample-servers", &list)
	if n := len(strings.Split(list.Data["MEMCACHED_SERVERS"], ",")); n != 100 {
		t.Errorf("100 replicas, %d servers listed", n)
	}
}
