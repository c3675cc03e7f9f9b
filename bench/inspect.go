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

package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// endState is what the chaos scenarios check once the faults are over: every CR, every Helm
// release record and every object the chart makes in the namespace, read from the API server.
type endState struct {
	// leftovers: anything that is not as it must be (empty when the scenario passes).
	leftovers []string
	// revisions per release: the highest revision number of each CR's release.
	maxRevision, sumRevision, releases int
	// interrupted counts the revisions the operator marked failed because an operation on them
	// was cut off (their description ends with the operator's mark).
	interrupted int
}

// chartKinds are the kinds the chart renders in the bench (no ServiceMonitor: its API is not
// served), listed to find objects without a release.
var chartKinds = map[string]schema.GroupVersionResource{
	"StatefulSet":         {Group: "apps", Version: "v1", Resource: "statefulsets"},
	"ConfigMap":           {Version: "v1", Resource: "configmaps"},
	"Service":             {Version: "v1", Resource: "services"},
	"ServiceAccount":      {Version: "v1", Resource: "serviceaccounts"},
	"PodDisruptionBudget": {Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"},
	"NetworkPolicy":       {Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"},
}

// expectation is what the CRs' specs ask for: the CRs that must exist, with the replicas of
// each (the spec changes of the churn scenario change them).
type expectation map[string]int64

// inspect compares the namespace with want.
func inspect(ctx context.Context, kc kubernetes.Interface, dc dynamic.Interface, want expectation) (endState, error) {
	var st endState
	bad := func(format string, args ...any) { st.leftovers = append(st.leftovers, fmt.Sprintf(format, args...)) }

	crs, err := dc.Resource(memcachedGVR).Namespace(benchNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return st, err
	}
	present := map[string]bool{}
	for _, cr := range crs.Items {
		name := cr.GetName()
		present[name] = true
		if _, ok := want[name]; !ok {
			bad("Memcached %s was deleted but is still there (finalizers %v)", name, cr.GetFinalizers())
			continue
		}
		if !deployedCondition(&cr) {
			bad("Memcached %s is not Deployed", name)
		}
	}
	for name := range want {
		if !present[name] {
			bad("Memcached %s is missing", name)
		}
	}

	// Objects the chart made, by kind and name, and the release each names as its owner.
	objects := map[string]string{}
	for kind, gvr := range chartKinds {
		list, err := dc.Resource(gvr).Namespace(benchNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return st, err
		}
		for _, obj := range list.Items {
			if release := obj.GetAnnotations()["meta.helm.sh/release-name"]; release != "" {
				objects[kind+"/"+obj.GetName()] = release
			}
		}
	}

	records, err := kc.CoreV1().Secrets(benchNamespace).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"})
	if err != nil {
		return st, err
	}
	type revision struct {
		version int
		status  string
		data    []byte
	}
	byRelease := map[string][]revision{}
	for _, s := range records.Items {
		v, _ := strconv.Atoi(s.Labels["version"])
		byRelease[s.Labels["name"]] = append(byRelease[s.Labels["name"]], revision{v, s.Labels["status"], s.Data["release"]})
	}
	inManifests := map[string]bool{}
	for name, revs := range byRelease {
		sort.Slice(revs, func(i, j int) bool { return revs[i].version < revs[j].version })
		if _, ok := want[name]; !ok {
			bad("release %s of a deleted Memcached has %d records left", name, len(revs))
			continue
		}
		st.releases++
		last := revs[len(revs)-1]
		st.sumRevision += last.version
		st.maxRevision = max(st.maxRevision, last.version)
		deployed := 0
		for _, r := range revs {
			switch {
			case r.status == "deployed":
				deployed++
			case strings.HasPrefix(r.status, "pending"):
				bad("release %s revision %d is left %s", name, r.version, r.status)
			}
			rel, err := decodeRecord(r.data)
			if err != nil {
				return st, fmt.Errorf("release %s revision %d: %w", name, r.version, err)
			}
			if rel.Info.Status == "failed" && strings.HasSuffix(rel.Info.Description, "marked failed by the operator") {
				st.interrupted++
			}
			if r.version == last.version {
				for _, key := range manifestObjects(rel.Manifest) {
					inManifests[key] = true
					if objects[key] != name {
						bad("release %s lacks %s, which its manifest holds", name, key)
					}
				}
			}
		}
		if deployed != 1 || last.status != "deployed" {
			bad("release %s has %d deployed revisions and its last, %d, is %s", name, deployed, last.version, last.status)
		}
	}
	for name := range want {
		if _, ok := byRelease[name]; !ok {
			bad("Memcached %s has no release records", name)
		}
	}
	for key, release := range objects {
		if !inManifests[key] {
			bad("%s (release %s) is in no deployed release's manifest", key, release)
		}
	}
	// Each CR's StatefulSet (named by the chart, found by its release) on the CR's latest spec.
	sets, err := kc.AppsV1().StatefulSets(benchNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return st, err
	}
	byCR := map[string]int64{}
	for _, s := range sets.Items {
		if cr := s.Annotations["meta.helm.sh/release-name"]; cr != "" && s.Spec.Replicas != nil {
			byCR[cr] = int64(*s.Spec.Replicas)
		}
	}
	for name, replicas := range want {
		if got, ok := byCR[name]; !ok {
			bad("Memcached %s has no StatefulSet", name)
		} else if got != replicas {
			bad("the StatefulSet of Memcached %s runs %d servers, the CR asks for %d", name, got, replicas)
		}
	}
	sort.Strings(st.leftovers)
	return st, nil
}

func deployedCondition(cr *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Deployed" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// record is the part of a Helm release record the checks read.
type record struct {
	Manifest string `json:"manifest"`
	Info     struct {
		Status      string `json:"status"`
		Description string `json:"description"`
	} `json:"info"`
}

// decodeRecord reads a release record's data as Helm's Secret driver writes it: base64 of
// gzipped JSON.
func decodeRecord(data []byte) (record, error) {
	var rel record
	raw, err := base64.StdEncoding.DecodeString(string(data))
	if err != nil {
		return rel, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return rel, err
	}
	js, err := io.ReadAll(zr)
	if err != nil {
		return rel, err
	}
	return rel, json.Unmarshal(js, &rel)
}

// manifestObjects lists a release manifest's objects as "Kind/name".
func manifestObjects(manifest string) []string {
	var keys []string
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); err != nil {
			if !errors.Is(err, io.EOF) {
				keys = append(keys, "unreadable manifest: "+err.Error())
			}
			return keys
		}
		if obj.Object != nil {
			keys = append(keys, obj.GetKind()+"/"+obj.GetName())
		}
	}
}
