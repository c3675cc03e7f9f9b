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

// Package operand holds what the operator decides about the memcached pods it runs, for the Helm
// chart and the Go controllers alike: which image they use and how they are secured.
package operand

import (
	"fmt"
	"strings"
)

// The environment variables that override the chart's images (OLM lists them in the CSV's
// relatedImages, so that disconnected installs can mirror them and pull them by digest).
const (
	// RelatedImageEnv overrides the memcached image.
	RelatedImageEnv = "RELATED_IMAGE_MEMCACHED"
	// ExporterRelatedImageEnv overrides the memcached exporter's image (metrics.image).
	ExporterRelatedImageEnv = "RELATED_IMAGE_MEMCACHED_EXPORTER"
)

// Image is a container image reference split the way the chart's values hold it.
type Image struct {
	Repository string
	Tag        string
	Digest     string
}

// String is the reference a pod uses: repository@digest, else repository:tag.
func (i Image) String() string {
	if i.Digest != "" {
		return i.Repository + "@" + i.Digest
	}
	return i.Repository + ":" + i.Tag
}

// ParseImage splits repository[:tag][@digest]. A reference without tag or digest is refused,
// because "latest" would make the operand version drift.
func ParseImage(ref string) (Image, error) {
	var img Image
	rest := strings.TrimSpace(ref)
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		img.Digest = rest[at+1:]
		rest = rest[:at]
	}
	if colon := strings.LastIndex(rest, ":"); colon > strings.LastIndex(rest, "/") {
		img.Tag = rest[colon+1:]
		rest = rest[:colon]
	}
	img.Repository = rest
	switch {
	case img.Repository == "":
		return Image{}, fmt.Errorf("image %q has no repository", ref)
	case img.Tag == "" && img.Digest == "":
		return Image{}, fmt.Errorf("image %q has neither a tag nor a digest", ref)
	case img.Digest != "" && !strings.HasPrefix(img.Digest, "sha256:"):
		return Image{}, fmt.Errorf("image %q: the digest must start with sha256", ref)
	}
	return img, nil
}

// ChartImage reads the default memcached image from the chart's values.yaml (image.repository,
// image.tag).
func ChartImage(values map[string]any) (Image, error) {
	return chartImage(values, "image")
}

// ChartExporterImage reads the default exporter image from the chart's values.yaml (metrics.image).
func ChartExporterImage(values map[string]any) (Image, error) {
	return chartImage(values, "metrics", "image")
}

func chartImage(values map[string]any, path ...string) (Image, error) {
	img := values
	for _, key := range path {
		img, _ = img[key].(map[string]any)
	}
	repo, _ := img["repository"].(string)
	tag := fmt.Sprint(img["tag"])
	if repo == "" || img["tag"] == nil || tag == "" {
		return Image{}, fmt.Errorf("the chart's values.yaml must set %[1]s.repository and %[1]s.tag", strings.Join(path, "."))
	}
	digest, _ := img["digest"].(string)
	return Image{Repository: repo, Tag: tag, Digest: digest}, nil
}

// DefaultImage is the memcached image of pods whose CR names none: relatedImage (the operator's
// RELATED_IMAGE_MEMCACHED) if set, else the chart's pinned image. overridden says which one applies.
func DefaultImage(chartValues map[string]any, relatedImage string) (img Image, overridden bool, err error) {
	return defaultImage(chartValues, relatedImage, RelatedImageEnv, ChartImage)
}

// DefaultExporterImage is DefaultImage for the exporter (RELATED_IMAGE_MEMCACHED_EXPORTER).
func DefaultExporterImage(chartValues map[string]any, relatedImage string) (img Image, overridden bool, err error) {
	return defaultImage(chartValues, relatedImage, ExporterRelatedImageEnv, ChartExporterImage)
}

func defaultImage(chartValues map[string]any, relatedImage, env string, fromChart func(map[string]any) (Image, error)) (Image, bool, error) {
	if ref := relatedImage; ref != "" {
		img, err := ParseImage(ref)
		if err != nil {
			return Image{}, false, fmt.Errorf("%s: %w", env, err)
		}
		return img, true, nil
	}
	img, err := fromChart(chartValues)
	return img, false, err
}
