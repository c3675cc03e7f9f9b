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
// generator's clock, so that `make bundle` is reproducible.
//
//	go run ./hack/csvpatch -csv bundle/manifests/memcached-operator.clusterserviceversion.yaml -image IMG -created-at 2026-11-21T00:00:00Z
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/yaml"
)

func main() {
	csvPath := flag.String("csv", "", "the bundle's ClusterServiceVersion")
	image := flag.String("image", "", "the operator image")
	createdAt := flag.String("created-at", "", "the release date, RFC 3339")
	flag.Parse()
	if err := run(*csvPath, *image, *createdAt); err != nil {
		fmt.Fprintln(os.Stderr, "csvpatch:", err)
		os.Exit(1)
	}
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
