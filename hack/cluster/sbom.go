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
	"encoding/json"
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
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

// sbomArtifact is an OCI 1.1 artifact that carries an SBOM and refers to the image it describes
// (its subject): its artifactType is the SBOM's media type, its config the empty descriptor, its
// one layer the SBOM. Registries list it among the image's referrers
// (GET /v2/<repo>/referrers/<digest>), or under the tag sha256-<digest> where they do not serve
// that API.
func sbomArtifact(subject v1.Image, sbom []byte) (v1.Image, error) {
	desc, err := partial.Descriptor(subject)
	if err != nil {
		return nil, err
	}
	a := &artifactManifest{blobs: map[v1.Hash][]byte{}}
	blob := func(mt types.MediaType, b []byte) v1.Descriptor {
		h, n, _ := v1.SHA256(bytes.NewReader(b))
		a.blobs[h] = b
		return v1.Descriptor{MediaType: mt, Size: n, Digest: h}
	}
	empty := blob(types.OCIEmptyJSON, []byte("{}"))
	empty.Data = []byte("{}")
	layer := blob(SPDXMediaType, sbom)
	layer.Annotations = map[string]string{"org.opencontainers.image.title": "sbom.spdx.json"}
	subjectDesc := v1.Descriptor{MediaType: desc.MediaType, Size: desc.Size, Digest: desc.Digest}
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, ArtifactType: string(SPDXMediaType),
		Config: empty, Layers: []v1.Descriptor{layer}, Subject: &subjectDesc}
	if a.raw, err = json.Marshal(m); err != nil {
		return nil, err
	}
	return partial.CompressedToImage(a)
}

// artifactManifest is sbomArtifact's manifest as serialized, and its blobs (the config, the
// SBOM), which go-containerregistry's image types cannot make: they have no artifactType and no
// empty config.
type artifactManifest struct {
	raw   []byte
	blobs map[v1.Hash][]byte
}

func (a *artifactManifest) RawManifest() ([]byte, error)        { return a.raw, nil }
func (a *artifactManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }
func (a *artifactManifest) RawConfigFile() ([]byte, error)      { return []byte("{}"), nil }
func (a *artifactManifest) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	m, err := v1.ParseManifest(bytes.NewReader(a.raw))
	if err != nil {
		return nil, err
	}
	for _, d := range append([]v1.Descriptor{m.Config}, m.Layers...) {
		if d.Digest == h {
			return static.NewLayer(a.blobs[h], d.MediaType), nil
		}
	}
	return nil, fmt.Errorf("blob %s is not in the artifact", h)
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
