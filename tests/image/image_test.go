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

// Package image checks the operator image that make image-build writes (an OCI layout of
// linux/amd64 and linux/arm64) for what Red Hat's certification (preflight) asks of an operator
// image: the labels name, vendor, version, release, summary, description and maintainer, and its
// licenses under /licenses; and that they agree with the Makefile's version and the CSV.
package image

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// descriptor is an OCI descriptor: what an index or a manifest points at.
type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Platform  *struct {
		Architecture string `json:"architecture"`
	} `json:"platform,omitempty"`
}

func TestOperatorImageCarriesTheCertificationLabelsAndLicenses(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	images := os.Getenv("IMAGES_DIR")
	if images == "" {
		images = filepath.Join(root, "bin", "images")
	}
	layout := filepath.Join(images, "operator")
	blob := func(digest string, into any) {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join(layout, "blobs", strings.ReplaceAll(digest, ":", "/")))
		if err != nil {
			t.Fatalf("the operator image of make image-build: %v", err)
		}
		if err := json.Unmarshal(raw, into); err != nil {
			t.Fatal(err)
		}
	}
	var top struct{ Manifests []descriptor }
	raw, err := os.ReadFile(filepath.Join(layout, "index.json"))
	if err != nil {
		t.Fatalf("the operator image of make image-build: %v", err)
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	if len(top.Manifests) != 1 {
		t.Fatalf("the layout holds %d images, want the operator's index alone", len(top.Manifests))
	}
	var index struct{ Manifests []descriptor }
	blob(top.Manifests[0].Digest, &index)

	version := makefileVersion(t, root)
	csv := csvBase(t, root)
	arches := map[string]bool{}
	for _, m := range index.Manifests {
		arch := m.Platform.Architecture
		arches[arch] = true
		t.Run(arch, func(t *testing.T) {
			var manifest struct {
				Config descriptor
				Layers []descriptor
			}
			blob(m.Digest, &manifest)
			var config struct {
				Config struct{ Labels map[string]string }
			}
			blob(manifest.Config.Digest, &config)
			labels := config.Config.Labels
			for _, l := range []string{"name", "vendor", "version", "release", "summary", "description", "maintainer"} {
				if strings.TrimSpace(labels[l]) == "" {
					t.Errorf("label %s is missing or empty (labels: %v)", l, labels)
				}
			}
			if labels["version"] != version || labels["release"] != version {
				t.Errorf("labels version %q and release %q, want the Makefile's VERSION %q", labels["version"], labels["release"], version)
			}
			if labels["vendor"] != csv.Spec.Provider.Name {
				t.Errorf("label vendor %q, the CSV's provider %q", labels["vendor"], csv.Spec.Provider.Name)
			}
			if len(csv.Spec.Maintainers) == 0 || !strings.Contains(labels["maintainer"], csv.Spec.Maintainers[0].Email) {
				t.Errorf("label maintainer %q does not name the CSV's maintainers %v", labels["maintainer"], csv.Spec.Maintainers)
			}
			license := layerFile(t, layout, manifest.Layers, "licenses/LICENSE")
			if !strings.Contains(license, "Apache License") || !strings.Contains(license, "Version 2.0") {
				t.Errorf("/licenses/LICENSE is not the project's Apache 2.0 license: %.80q", license)
			}
			own, err := os.ReadFile(filepath.Join(root, "LICENSE"))
			if err != nil || string(own) != license {
				t.Errorf("/licenses/LICENSE differs from the repository's LICENSE (%v)", err)
			}
		})
	}
	if !arches["amd64"] || !arches["arm64"] {
		t.Errorf("the operator index has %v, want amd64 and arm64", arches)
	}
}

// layerFile is the content of path in the image's layers (gzip tarballs), or "" if none has it.
func layerFile(t *testing.T, layout string, layers []descriptor, path string) string {
	t.Helper()
	for _, l := range layers {
		f, err := os.Open(filepath.Join(layout, "blobs", strings.ReplaceAll(l.Digest, ":", "/")))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimPrefix(h.Name, "/") == path && h.Typeflag == tar.TypeReg {
				b, err := io.ReadAll(tr)
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
		}
	}
	t.Errorf("no layer of the image has /%s", path)
	return ""
}

// makefileVersion is the Makefile's VERSION, the one source of the operator's version.
func makefileVersion(t *testing.T, root string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^VERSION \?= (\S+)$`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("the Makefile sets no VERSION")
	}
	return string(m[1])
}

// csvBase is the parts of the CSV's base (config/manifests) the labels agree with.
func csvBase(t *testing.T, root string) (csv struct {
	Spec struct {
		Provider    struct{ Name string }
		Maintainers []struct{ Name, Email string }
	}
}) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "config", "manifests", "bases", "memcached-operator.clusterserviceversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &csv); err != nil {
		t.Fatal(err)
	}
	return csv
}
