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

// Command csvpatch finishes the CSV that `operator-sdk generate bundle` wrote: it records the
// operator image in metadata.annotations.containerImage and as the first of spec.relatedImages
// (the generator lists only the RELATED_IMAGE_* operand images), so that disconnected installs
// mirror everything the bundle runs; and it sets createdAt to the release's date instead of the
// generator's clock, so that `make bundle` is reproducible. With -annotations and -dockerfile it
// also writes com.redhat.openshift.versions, the OpenShift/OKD versions OperatorHub offers the
// bundle on, from the CSV's minKubeVersion (its one source), into the bundle's metadata and image
// labels: a cluster older than the floor is not offered a bundle it would refuse.
//
//	go run ./hack/csvpatch -csv bundle/manifests/memcached-operator.clusterserviceversion.yaml -image IMG -created-at 2026-11-21T00:00:00Z \
//		-annotations bundle/metadata/annotations.yaml -dockerfile bundle.Dockerfile
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

func main() {
	csvPath := flag.String("csv", "", "the bundle's ClusterServiceVersion")
	image := flag.String("image", "", "the operator image")
	createdAt := flag.String("created-at", "", "the release date, RFC 3339")
	annotationsPath := flag.String("annotations", "", "the bundle's metadata/annotations.yaml (optional)")
	dockerfile := flag.String("dockerfile", "", "the bundle's Dockerfile (optional)")
	flag.Parse()
	err := run(*csvPath, *image, *createdAt)
	if err == nil && (*annotationsPath != "" || *dockerfile != "") {
		err = writeOpenShiftVersions(*csvPath, *annotationsPath, *dockerfile)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "csvpatch:", err)
		os.Exit(1)
	}
}

// openShiftVersionKey is the annotation and label OperatorHub reads; "v4.17" means 4.17 and later.
const openShiftVersionKey = "com.redhat.openshift.versions"

// openShiftForKube maps a Kubernetes minor version to the OpenShift/OKD release that ships it.
var openShiftForKube = map[int]string{
	28: "v4.15", 29: "v4.16", 30: "v4.17", 31: "v4.18", 32: "v4.19", 33: "v4.20", 34: "v4.21", 35: "v4.22",
}

// openShiftVersions is the com.redhat.openshift.versions value of a CSV's minKubeVersion.
func openShiftVersions(minKubeVersion string) (string, error) {
	var major, minor, patch int
	if _, err := fmt.Sscanf(minKubeVersion, "%d.%d.%d", &major, &minor, &patch); err != nil || major != 1 {
		return "", fmt.Errorf("minKubeVersion %q is not 1.x.y", minKubeVersion)
	}
	v, ok := openShiftForKube[minor]
	if !ok {
		return "", fmt.Errorf("no OpenShift release is known for Kubernetes 1.%d: add it to openShiftForKube", minor)
	}
	return v, nil
}

func writeOpenShiftVersions(csvPath, annotationsPath, dockerfile string) error {
	raw, err := os.ReadFile(csvPath)
	if err != nil {
		return err
	}
	var csv struct {
		Spec struct {
			MinKubeVersion string `json:"minKubeVersion"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &csv); err != nil {
		return err
	}
	versions, err := openShiftVersions(csv.Spec.MinKubeVersion)
	if err != nil {
		return err
	}
	if annotationsPath != "" {
		if err := setLine(annotationsPath, "  "+openShiftVersionKey+": ", versions, "\n"); err != nil {
			return err
		}
	}
	if dockerfile != "" {
		if err := setLine(dockerfile, "LABEL "+openShiftVersionKey+"=", versions, "\n# Copy files"); err != nil {
			return err
		}
	}
	return nil
}

// setLine sets the line that starts with prefix to prefix+value, or adds it before the first
// occurrence of before (at the end if before is "\n" or absent), with a comment that says where
// it comes from.
func setLine(path, prefix, value, before string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			lines[i] = prefix + value
			return os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
		}
	}
	indent := prefix[:len(prefix)-len(strings.TrimLeft(prefix, " "))]
	add := "\n" + indent + "# OpenShift/OKD versions OperatorHub offers this bundle on, from the CSV's minKubeVersion (hack/csvpatch).\n" + prefix + value + "\n"
	text := strings.Join(lines, "\n") + "\n"
	if i := strings.Index(text, before); before != "\n" && i >= 0 {
		text = text[:i] + add + text[i:]
	} else {
		text += add
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

func run(path, image, createdAt string) error {
	if path == "" || image == "" || createdAt == "" {
		return fmt.Errorf("-csv, -image and -created-at are required")
	}
	if _, err := time.Parse(time.RFC3339, createdAt); err != nil {
		return fmt.Errorf("-created-at: %w", err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := patch(raw, image, createdAt)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, out, 0o644)
}

const operatorImageName = "memcached-operator"

func patch(raw []byte, image, createdAt string) ([]byte, error) {
	var csv map[string]any
	if err := yaml.Unmarshal(raw, &csv); err != nil {
		return nil, err
	}
	meta, _ := csv["metadata"].(map[string]any)
	spec, _ := csv["spec"].(map[string]any)
	if meta == nil || spec == nil {
		return nil, fmt.Errorf("not a ClusterServiceVersion: no metadata or spec")
	}
	annotations, _ := meta["annotations"].(map[string]any)
	if annotations == nil {
		annotations = map[string]any{}
		meta["annotations"] = annotations
	}
	annotations["containerImage"] = image
	annotations["createdAt"] = createdAt

	related := []any{map[string]any{"name": operatorImageName, "image": image}}
	existing, _ := spec["relatedImages"].([]any)
	for _, r := range existing {
		if m, ok := r.(map[string]any); ok && m["name"] == operatorImageName {
			continue
		}
		related = append(related, r)
	}
	spec["relatedImages"] = related
	return yaml.Marshal(csv)
}
