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

package crd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"sigs.k8s.io/crdify/pkg/config"
	"sigs.k8s.io/crdify/pkg/runner"
	"sigs.k8s.io/crdify/pkg/validations/property"
	"sigs.k8s.io/yaml"
)

// olmV1Config is the configuration of OLM v1's CRD upgrade-safety preflight (operator-controller
// internal/operator-controller/rukpak/preflights/crdupgradesafety, defaultConfig): changes no check
// handles fail, descriptions may change, enums may grow.
func olmV1Config() *config.Config {
	return &config.Config{
		Conversion:           config.ConversionPolicyIgnore,
		UnhandledEnforcement: config.EnforcementPolicyError,
		Validations: []config.ValidationConfig{
			{Name: "description", Enforcement: config.EnforcementPolicyNone},
			{Name: "enum", Enforcement: config.EnforcementPolicyError,
				Configuration: map[string]any{"additionPolicy": property.AdditionPolicyAllow}},
		},
	}
}

// upgradeErrors runs OLM v1's preflight on an upgrade from old to new, and returns its errors.
func upgradeErrors(t *testing.T, old, new *apiextensionsv1.CustomResourceDefinition) []string {
	t.Helper()
	r, err := runner.New(olmV1Config(), runner.DefaultRegistry())
	if err != nil {
		t.Fatal(err)
	}
	results := r.Run(old, new)
	var errs []string
	for _, res := range results.CRDValidation {
		for _, e := range res.Errors {
			errs = append(errs, fmt.Sprintf("%s: %s", res.Name, e))
		}
	}
	for _, vr := range append(results.SameVersionValidation, results.ServedVersionValidation...) {
		for _, pr := range vr.PropertyComparisons {
			for _, cr := range pr.ComparisonResults {
				for _, e := range cr.Errors {
					errs = append(errs, fmt.Sprintf("%s %s %s: %s", vr.Version, pr.Property, cr.Name, e))
				}
			}
		}
	}
	return errs
}

func releasedCRD(t *testing.T, commit, file string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	raw, err := exec.Command("git", "-C", filepath.Join("..", ".."), "show", commit+":config/crd/bases/"+file).Output()
	if err != nil {
		t.Fatalf("git show %s:%s (the tests need the repository's history): %v", commit, file, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

// crdFiles are the CRDs of the bundle.
var crdFiles = []string{"cache.my.domain_memcacheds.yaml", "cache.my.domain_memcachedbackups.yaml"}

// crdChange is a change the preflight reports, at a property path (and, within, its fields), with
// the reason it is made anyway.
type crdChange struct {
	path   string
	within bool
	reason string
}

// from02 are the changes of 1.0.0 to the CRDs of 0.2.0 (and 0.1.0) that OLM v1's preflight reports as unsafe,
// each with its reason: 1.0.0 refuses at admission what the operator would refuse or fail on
// later (issue #11, a security fix; docs/upgrades.md), and status no longer holds the manifest.
// An OLM v1 install of 0.2.0 upgrades to 1.0.0 with the preflight off for that one step
// (docs/olm.md). Every other change must pass, and from 1.0.0 on all but from10's.
var from02 = []crdChange{
	{"^.spec", false, "cross-field rules: the memory limit above the item memory, the exporter's port"},
	{"^.spec.image", true, "OCI repository names; memcached 1.6 tags"},
	{"^.spec.metrics", true, "the exporter's port and image, Prometheus durations"},
	{"^.spec.memcached", true, "memcached's item size rules and the extraArgs allowlist"},
	{"^.spec.resources", true, "cpu, memory and ephemeral-storage only, requests at most limits, no claims"},
	{"^.spec.tolerations", true, "Kubernetes' toleration rules"},
	{"^.spec.nodeSelector", true, "label keys and values"},
	{"^.spec.podLabels", true, "label keys and values, not the chart's selector labels"},
	{"^.spec.podAnnotations", true, "qualified names, not the pod's security annotations"},
	{"^.spec.podDisruptionBudget", true, "a number of pods or a percentage up to 100%"},
	{"^.spec.priorityClassName", false, "a PriorityClass name, not the system- classes"},
	{"^.status.deployedRelease.manifest", false, "the rendered manifest leaves status"},
}

// from10 is the one change to 1.0.0's CRDs that OLM v1's preflight reports as unsafe: the
// rule that a resource request may not exceed its limit, split per resource and written with
// shorter regular expressions (with two fixes: equal amounts in other units, and the n and u
// suffixes, are accepted), and quantities' exponents whole numbers, as Kubernetes parses them (a
// CR with 1e1.5 was stored, and then the operator could not decode it). API servers before 1.34 estimate its
// cost above their budget and refuse 1.0.0's CRD, so 1.0.0 could not be installed on the versions
// it claimed (1.30+; docs/olm.md). An OLM v1 install of 1.0.0 (then on 1.34 or later) upgrades
// with the preflight off for that one step, as from 0.2.0.
var from10 = []crdChange{
	{"^.spec.resources", true, "requests at most limits: one rule per resource, within the cost older API servers allow, " +
		"equal amounts in other units and n/u suffixes accepted; quantities with a fractional exponent, which Kubernetes cannot parse, refused"},
}

// The CRDs of this tree pass OLM v1's CRD upgrade-safety preflight from every release (the
// catalog's skipRange leads from each straight to this one), with the preflight's own code
// (sigs.k8s.io/crdify, configured as operator-controller configures it): from 1.0.0 on, a release
// changes the API in a way that blocks an OLM v1 upgrade only to fix a CRD that cannot install
// (from10).
func TestCRDUpgradeSafetyFromEveryRelease(t *testing.T) {
	for _, r := range releases(t) {
		for _, f := range crdFiles {
			errs := upgradeErrors(t, releasedCRD(t, r.Commit, f), readCRD(t, filepath.Join("..", "..", "config", "crd", "bases", f)))
			for _, e := range errs {
				if strings.HasPrefix(r.Version, "0.") && allowed(from02, e) || r.Version == "1.0.0" && allowed(from10, e) {
					continue
				}
				t.Errorf("%s from %s: OLM v1 refuses to upgrade over this change: %s", f, r.Version, e)
			}
		}
	}
}

// allowed says whether a preflight error is one of the listed changes.
func allowed(changes []crdChange, e string) bool {
	for _, c := range changes {
		prefixes := []string{"v1 " + c.path + " ", "existingFieldRemoval: removed field : v1." + c.path}
		if c.within {
			prefixes = append(prefixes, "v1 "+c.path+".")
		}
		for _, p := range prefixes {
			if strings.HasPrefix(e, p) && (c.within || !strings.HasPrefix(e[len(p):], ".")) {
				return true
			}
		}
	}
	return false
}

type release struct{ Version, Commit string }

// releases are the releases releases.yaml records, oldest first.
func releases(t *testing.T) []release {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "releases.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Releases []release }
	if err := yaml.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Releases) == 0 {
		t.Fatal("releases.yaml records no release")
	}
	return list.Releases
}

// While an operator upgrade runs, the operator of the release upgraded from (any: skipRange)
// still reconciles the CRs that the new CRD now serves: every default of the new schema reaches
// it. Its chart must accept them, or it fails every CR (and, before 1.0.0, held the upgrade back
// on those failures).
func TestNewDefaultsPassEveryReleasesChart(t *testing.T) {
	for _, r := range releases(t) {
		newDefaultsPassChartOf(t, r)
	}
}

func newDefaultsPassChartOf(t *testing.T, r release) {
	version, commit := r.Version, r.Commit
	raw, err := exec.Command("git", "-C", filepath.Join("..", ".."), "show", commit+":helm-charts/memcached/values.schema.json").Output()
	if err != nil {
		t.Fatalf("git show %s:helm-charts/memcached/values.schema.json: %v", commit, err)
	}
	crd := readCRD(t, filepath.Join("..", "..", "config", "crd", "bases", "cache.my.domain_memcacheds.yaml"))
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil); err != nil {
		t.Fatal(err)
	}
	s, err := schema.NewStructural(internal)
	if err != nil {
		t.Fatal(err)
	}
	// A CR as users of that release wrote it: the sample, and one with every object it knew.
	for _, spec := range []map[string]any{
		{"replicaCount": int64(3)},
		{"memcached": map[string]any{"memoryLimitMB": int64(96)}, "metrics": map[string]any{}, "service": map[string]any{}, "podDisruptionBudget": map[string]any{}},
	} {
		obj := map[string]any{"apiVersion": "cache.my.domain/v1", "kind": "Memcached", "metadata": map[string]any{"name": "m"}, "spec": spec}
		defaulting.Default(obj, s)
		if err := chartutil.ValidateAgainstSingleSchema(obj["spec"].(map[string]any), raw); err != nil {
			t.Errorf("the chart of %s refuses a CR %v as this CRD defaults it: %v", version, spec, err)
		}
	}
}
