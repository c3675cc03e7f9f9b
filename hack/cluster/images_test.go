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
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"io"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The bundle pins the operator image by the digest of a local build: building the same files
// twice must give the same digest, and the image must be pushable by that digest alone.
func TestOperatorImageIsReproducibleAndPushedByDigest(t *testing.T) {
	repo := repoOf(t, map[string]string{
		"Dockerfile":                          "FROM scratch\n",
		"watches.yaml":                        "- group: cache.my.domain\n",
		"helm-charts/memcached/Chart.yaml":    "name: memcached\n",
		"helm-charts/memcached/values.yaml":   "replicaCount: 1\n",
		"helm-charts/memcached/templates/a.t": "{{ .Values.replicaCount }}\n",
	})
	manager := managerFor(t, runtime.GOARCH)
	first, err := operatorImage(manager, repo, "", "")
	if err != nil {
		t.Fatal(err)
	}
	// Other file times and modes (another checkout): the same image.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(repo, "watches.yaml"), later, later); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(repo, "watches.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	second, err := operatorImage(manager, repo, "", "")
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := first.Digest()
	d2, _ := second.Digest()
	if d1 != d2 {
		t.Fatalf("two builds of the same files: %s and %s", d1, d2)
	}

	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	digestFile := filepath.Join(t.TempDir(), "digest")
	c := &Cluster{StateDir: t.TempDir()}
	if err := c.deliver(first, host+"/example/memcached-operator:v9.9.9", delivery{byDigest: true, digestFile: digestFile}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(digestFile); strings.TrimSpace(string(got)) != d1.String() {
		t.Errorf("digest file %q, want %s", got, d1)
	}
	r, _ := name.NewRepository(host + "/example/memcached-operator")
	tags, err := remote.List(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(tags) != 0 {
		t.Errorf("pushed by digest, the repository has tags %v", tags)
	}
	if _, err := remote.Head(r.Digest(d1.String())); err != nil {
		t.Errorf("the image is not in the registry by its digest: %v", err)
	}
}

// The operator image is an index of linux/amd64 and linux/arm64 when both managers are given:
// reproducible, each image saying its architecture, written as an OCI layout that pushes by the
// index's digest, and pulled for a platform as a runtime pulls it.
func TestOperatorIndexIsReproducibleForBothArchitectures(t *testing.T) {
	repo := repoOf(t, map[string]string{"Dockerfile": "FROM scratch\n", "watches.yaml": "- group: cache.my.domain\n", "helm-charts/memcached/Chart.yaml": "name: memcached\n"})
	managers := map[string]string{}
	for _, arch := range []string{"amd64", "arm64"} {
		managers[arch] = managerFor(t, arch)
	}
	build := func() v1.ImageIndex {
		t.Helper()
		var images []platformImage
		for _, arch := range []string{"amd64", "arm64"} {
			img, err := operatorImage(managers[arch], repo, "", arch)
			if err != nil {
				t.Fatal(err)
			}
			images = append(images, platformImage{arch, img})
		}
		idx, err := multiArch(images...)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	}
	first, second := build(), build()
	d1, _ := first.Digest()
	d2, _ := second.Digest()
	if d1 != d2 {
		t.Fatalf("two builds of the same files: %s and %s", d1, d2)
	}
	m, err := first.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 2 || m.MediaType != types.DockerManifestList {
		t.Fatalf("index %+v", m)
	}
	if raw, _ := first.RawManifest(); strings.Contains(string(raw), "artifactType") {
		t.Errorf("a Docker manifest list has no artifactType: %s", raw)
	}
	// The bytes of the image a release's bundle pins: a change of go-containerregistry or of Go's
	// gzip that changes them changes the digest of every image built since (make bundle pins the
	// new one); look at the manifests' difference before updating these.
	if d1.String() != goldenIndex {
		t.Errorf("the index of these files is %s, was %s", d1, goldenIndex)
	}
	if single, err := operatorImage(managers["amd64"], repo, "", "amd64"); err != nil {
		t.Fatal(err)
	} else if d, _ := single.Digest(); d.String() != goldenAmd64 {
		t.Errorf("the linux/amd64 image of these files is %s, was %s", d, goldenAmd64)
	}
	if _, err := operatorImage(managers["amd64"], repo, "", "arm64"); err == nil || !strings.Contains(err.Error(), "/manager is built for EM_X86_64, not for the image's linux/arm64") {
		t.Errorf("an amd64 manager in the arm64 image: %v", err)
	}
	for i, arch := range []string{"amd64", "arm64"} {
		d := m.Manifests[i]
		if d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != arch {
			t.Errorf("manifest %d: platform %+v, want linux/%s", i, d.Platform, arch)
		}
		img, err := first.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if cf, _ := img.ConfigFile(); cf.Architecture != arch || cf.OS != "linux" {
			t.Errorf("the %s image's config says %s/%s", arch, cf.OS, cf.Architecture)
		}
	}
	// A single image, as releases before 1.3.0 were built, is this machine's image unchanged.
	if runtime.GOARCH == "amd64" {
		single, _ := operatorImage(managers["amd64"], repo, "", "")
		amd64, _ := operatorImage(managers["amd64"], repo, "", "amd64")
		ds, _ := single.Digest()
		da, _ := amd64.Digest()
		if ds != da {
			t.Errorf("the single image %s differs from the index's amd64 image %s", ds, da)
		}
	}

	out := filepath.Join(t.TempDir(), "operator")
	if err := save(first, "quay.io/example/memcached-operator:v9.9.9", out); err != nil {
		t.Fatal(err)
	}
	back, err := fromLayout(out)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := back.Digest(); d != d1 {
		t.Fatalf("the layout holds %s, want %s", d, d1)
	}
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	c := &Cluster{StateDir: t.TempDir()}
	if err := c.deliver(back, host+"/example/memcached-operator:v9.9.9", delivery{byDigest: true}); err != nil {
		t.Fatal(err)
	}
	r, _ := name.NewRepository(host + "/example/memcached-operator")
	arm, err := remote.Image(r.Digest(d1.String()), remote.WithPlatform(v1.Platform{OS: "linux", Architecture: "arm64"}))
	if err != nil {
		t.Fatal(err)
	}
	if cf, _ := arm.ConfigFile(); cf.Architecture != "arm64" {
		t.Errorf("pulled for linux/arm64, got %s", cf.Architecture)
	}
}

// The digests of the operator images of TestOperatorIndexIsReproducibleForBothArchitectures' files.
const (
	goldenIndex = "sha256:852e77c5a848190678a9b9b24404654e7ebbdd62b7456ad343746599273b35ab"
	goldenAmd64 = "sha256:49e34c9b791184deacd5cf04113be7a9f7fccfa6687bc0282b43d01dacc21575"
)

// elfHeader is the header of an ELF executable for machine: all a test's binary needs to be one.
func elfHeader(machine elf.Machine) []byte {
	h := elf.Header64{Ident: [elf.EI_NIDENT]byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)},
		Type: uint16(elf.ET_EXEC), Machine: uint16(machine), Version: uint32(elf.EV_CURRENT), Ehsize: 64}
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, h)
	return b.Bytes()
}

// An SBOM is attached to each image of a pushed index as an OCI artifact that refers to it: the
// registry's referrers API lists it with its artifact type, and its layer is the SBOM.
func TestSBOMsAreAttachedAsReferrers(t *testing.T) {
	dir := t.TempDir()
	var images []platformImage
	for _, arch := range []string{"amd64", "arm64"} {
		bin := filepath.Join(dir, "tool-"+arch)
		if err := os.WriteFile(bin, []byte("binary for "+arch), 0o755); err != nil {
			t.Fatal(err)
		}
		img, err := binaryImage(bin, "/tool", "65532", arch)
		if err != nil {
			t.Fatal(err)
		}
		images = append(images, platformImage{arch, img})
		if err := os.WriteFile(sbomFile(filepath.Join(dir, "tool"), arch), []byte(`{"spdxVersion":"SPDX-2.3","name":"`+arch+`"}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := multiArch(images...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(true)))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	c := &Cluster{StateDir: t.TempDir()}
	ref := host + "/example/tool:v1"
	if err := c.deliver(idx, ref, delivery{}); err != nil {
		t.Fatal(err)
	}
	if err := c.attachSBOMs(idx, ref, filepath.Join(dir, "tool")); err != nil {
		t.Fatal(err)
	}
	repo, _ := name.NewRepository(host + "/example/tool")
	for _, p := range images {
		d, _ := p.img.Digest()
		refs, err := remote.Referrers(repo.Digest(d.String()))
		if err != nil {
			t.Fatal(err)
		}
		m, err := refs.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Manifests) != 1 {
			t.Fatalf("referrers of the %s image: %+v", p.arch, m.Manifests)
		}
		art, err := remote.Image(repo.Digest(m.Manifests[0].Digest.String()))
		if err != nil {
			t.Fatal(err)
		}
		// The OCI 1.1 shape (image-spec's guidelines for artifacts without a config). The
		// in-memory registry lists referrers by their config's media type, so the manifest
		// itself is read here.
		am, err := art.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if am.ArtifactType != string(SPDXMediaType) || am.Config.MediaType != types.OCIEmptyJSON || string(am.Config.Data) != "{}" ||
			am.Subject == nil || am.Subject.Digest != d || len(am.Layers) != 1 || am.Layers[0].MediaType != SPDXMediaType {
			t.Errorf("the %s image's SBOM artifact: %+v", p.arch, am)
		}
		if cfg, _ := art.RawConfigFile(); string(cfg) != "{}" {
			t.Errorf("its config blob: %q", cfg)
		}
		layers, _ := art.Layers()
		rc, _ := layers[0].Uncompressed()
		got, _ := io.ReadAll(rc)
		want, _ := os.ReadFile(sbomFile(filepath.Join(dir, "tool"), p.arch))
		if string(got) != string(want) {
			t.Errorf("the %s image's SBOM artifact holds %q, want %q", p.arch, got, want)
		}
	}
	if err := c.attachSBOMs(idx, ref, filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "make sbom") {
		t.Errorf("an image without its SBOM: %v", err)
	}
}

// The operator image carries the labels and the /licenses of the Dockerfile's last stage (what
// Red Hat's preflight asks of a certified image), its ${VERSION} the one given; a Dockerfile
// without them (a release's tree from before) builds the image it always did.
func TestOperatorImageTakesTheDockerfilesLabelsAndLicenses(t *testing.T) {
	dockerfile := `FROM golang:1.26 AS builder
ARG VERSION
LABEL stage=builder
COPY go.mod go.mod

FROM gcr.io/distroless/static:nonroot
ARG VERSION
LABEL name="memcached-operator" version="${VERSION}" release=$VERSION
LABEL summary="Memcached, \"quoted\", with spaces"
COPY LICENSE /licenses/LICENSE
COPY --from=builder /workspace/manager /manager
`
	repo := repoOf(t, map[string]string{"Dockerfile": dockerfile, "LICENSE": "Apache License\n",
		"watches.yaml": "- group: cache.my.domain\n", "helm-charts/memcached/Chart.yaml": "name: memcached\n"})
	manager := managerFor(t, runtime.GOARCH)
	if _, err := operatorImage(manager, repo, "", ""); err == nil || !strings.Contains(err.Error(), "label version uses [VERSION], which is not given") {
		t.Fatalf("no version for a label that uses it: %v", err)
	}
	img, err := operatorImage(manager, repo, "1.4.0", "")
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"name": "memcached-operator", "version": "1.4.0", "release": "1.4.0", "summary": `Memcached, "quoted", with spaces`}
	if !maps.Equal(cf.Config.Labels, want) {
		t.Errorf("labels %v, want %v (the last stage's only)", cf.Config.Labels, want)
	}
	if got := imageFiles(t, img)["/licenses/LICENSE"]; got != "Apache License\n" {
		t.Errorf("/licenses/LICENSE holds %q", got)
	}

	if err := os.WriteFile(filepath.Join(repo, "Dockerfile"), []byte("FROM scratch\nCOPY watches.yaml /watches.yaml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plain, err := operatorImage(manager, repo, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if cf, err := plain.ConfigFile(); err != nil || cf.Config.Labels != nil {
		t.Errorf("a Dockerfile without labels: labels %#v (%v), want none, as images were built before", cf.Config.Labels, err)
	}
	if _, ok := imageFiles(t, plain)["/licenses/LICENSE"]; ok {
		t.Error("a Dockerfile without /licenses: the image has one")
	}
}

// imageFiles are the regular files of img's layers, by path, with their content.
func imageFiles(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Typeflag == tar.TypeReg {
				b, err := io.ReadAll(tr)
				if err != nil {
					t.Fatal(err)
				}
				files["/"+strings.TrimPrefix(h.Name, "/")] = string(b)
			}
		}
		rc.Close()
	}
	return files
}

// repoOf is a repository of these files (path: content) in a folder of the test's.
func repoOf(t *testing.T, files map[string]string) string {
	t.Helper()
	repo := t.TempDir()
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, path), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return repo
}

// managerFor is a stand-in manager binary, an ELF header for arch.
func managerFor(t *testing.T, arch string) string {
	t.Helper()
	manager := filepath.Join(t.TempDir(), "manager-"+arch)
	if err := os.WriteFile(manager, elfHeader(elfMachines[arch]), 0o700); err != nil {
		t.Fatal(err)
	}
	return manager
}
