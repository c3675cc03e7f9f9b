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

package bundle_test

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// clusterScoped are the only rules the CSV may ask for cluster-wide, whatever the install mode,
// each with its reason. Everything else is namespaced and goes to `permissions`, which OLM grants
// only in the namespaces the OperatorGroup targets.
var clusterScoped = map[string]string{
	"/nodes":                                    "leader for life: a waiting pod reads the node of the lock holder, to take over from a NotReady node",
	"config.openshift.io/apiservers":            "the metrics server follows the cluster's TLS security profile (OpenShift's APIServer config)",
	"authentication.k8s.io/tokenreviews":        "the metrics endpoint authenticates its scrapers",
	"authorization.k8s.io/subjectaccessreviews": "the metrics endpoint authorizes its scrapers",
}

// The CSV's clusterPermissions hold no namespaced rule: installed in OwnNamespace or
// SingleNamespace mode, the operator gets no right in a namespace it does not watch.
func TestClusterPermissionsAreOnlyClusterScoped(t *testing.T) {
	csv := loadCSV(t)
	spec := csv.Spec.InstallStrategy.StrategySpec
	for _, p := range spec.ClusterPermissions {
		for _, r := range p.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					if _, ok := clusterScoped[g+"/"+res]; !ok {
						t.Errorf("clusterPermissions of %s grant %v on %s/%s cluster-wide: namespaced rules belong in permissions (config/manifests)",
							p.ServiceAccountName, r.Verbs, g, res)
					}
				}
			}
		}
	}
	var namespaced []string
	for _, p := range spec.Permissions {
		for _, r := range p.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					namespaced = append(namespaced, g+"/"+res)
				}
			}
		}
	}
	for _, want := range []string{"apps/deployments", "/secrets", "cache.my.domain/memcacheds", "operators.coreos.com/operatorconditions"} {
		if !slices.Contains(namespaced, want) {
			t.Errorf("permissions lack %s: the manager's rules must be bound in the operator's namespace", want)
		}
	}
}

// No rule of the CSV is a wildcard, or lets the operator grant itself more (escalate, bind,
// impersonate, or write RBAC objects).
func TestPermissionsCannotEscalate(t *testing.T) {
	csv := loadCSV(t)
	spec := csv.Spec.InstallStrategy.StrategySpec
	var rules []rbacv1.PolicyRule
	for _, p := range append(spec.ClusterPermissions, spec.Permissions...) {
		rules = append(rules, p.Rules...)
	}
	for _, r := range rules {
		for _, s := range slices.Concat(r.APIGroups, r.Resources, r.Verbs, r.NonResourceURLs) {
			if s == "*" {
				t.Errorf("rule %+v uses a wildcard", r)
			}
		}
		for _, v := range r.Verbs {
			if v == "escalate" || v == "bind" || v == "impersonate" {
				t.Errorf("rule %+v has the verb %s", r, v)
			}
		}
		if slices.Contains(r.APIGroups, rbacv1.GroupName) {
			t.Errorf("rule %+v touches RBAC objects", r)
		}
	}
}
