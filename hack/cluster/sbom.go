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
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// SPDXMediaType is the media type of an SPDX JSON document, and the artifact type of the OCI
// artifact that attaches one to an image.
const SPDXMediaType types.MediaType = "application/spdx+json"

// sbomFile is the SBOM of the image for arch that the Makefile's sbom target writes:
// <prefix>.linux-<arch>.spdx.json.
func sbomFile(prefix, arch string) string { return fmt.Sprintf("%s.linux-%s.spdx.json", prefix, arch) }

// sbomArtifact is an OCI artifact that carries an SBOM and refers to the image it describes (OCI
// 1.1 subject): registries list it among the image's referrers (GET /v2/<repo>/referrers/<digest>),
// or under the tag sha256-<digest> where they do not serve that API. Its config's media type is
// its artifact type, as registries that list referrers read it.
func sbomArtifact(subject v1.Image, sbom []byte) (v1.Image, error) {
	desc, err := partial.Descriptor(subject)
	if err != nil {
		return nil, err
	}
	a := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), SPDXMediaType)
	a, err = mutate.Append(a, mutate.Addendum{Layer: static.NewLayer(sbom, SPDXMediaType),
		Annotations: map[string]string{"org.opencontainers.image.title": "sbom.spdx.json"}})
	if err != nil {
		return nil, err
	}
	img, ok := mutate.Subject(a, *desc).(v1.Image)
	if !ok {
		return nil, fmt.Errorf("attaching a subject gave no image")
	}
	return img, nil
}

// platformImages are the images of an artifact by architecture: an image alone is this
// machine's, or the one its config names.
func platformImages(a artifact) (map[string]v1.Image, error) {
	out := map[string]v1.Image{}
	switch a := a.(type) {
	case v1.Image:
		cf, err := a.ConfigFile()
		if err != nil {
			return nil, err
		}
		out[cf.Architecture] = a
	case v1.ImageIndex:
		m, err := a.IndexManifest()
		if err != nil {
			return nil, err
		}
		for _, d := range m.Manifests {
			if d.Platform == nil {
				continue
			}
			img, err := a.Image(d.Digest)
			if err != nil {
				return nil, err
			}
			out[d.Platform.Architecture] = img
		}
	}
	return out, nil
}

// attachSBOMs pushes, for each image of a (pushed to ref), the SBOM the sbom target wrote for it
// (<prefix>.linux-<arch>.spdx.json) as an artifact that refers to it. Every image must have one.
func (c *Cluster) attachSBOMs(a artifact, ref, prefix string) error {
	images, err := platformImages(a)
	if err != nil {
		return err
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	for arch, img := range images {
		sbom, err := os.ReadFile(sbomFile(prefix, arch))
		if err != nil {
			return fmt.Errorf("the SBOM of the linux/%s image of %s (make sbom): %w", arch, ref, err)
		}
		artifact, err := sbomArtifact(img, sbom)
		if err != nil {
			return err
		}
		d, err := artifact.Digest()
		if err != nil {
			return err
		}
		if err := c.push(artifact, r.Context().Digest(d.String()).String()); err != nil {
			return fmt.Errorf("attach the SBOM of the linux/%s image of %s: %w", arch, ref, err)
		}
	}
	return nil
}
