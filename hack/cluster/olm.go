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
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// OLM in the cluster, from OLM's own Helm chart in its Go module, with images assembled from
// binaries built from the module proxy:
//   - olm: olm, catalog, package-server, cpb, copy-content, and busybox's sh and cp;
//   - opm: opm with its libraries, grpc_health_probe, and busybox (sh, cat, gzip), labelled as an
//     index image; the catalog operator unpacks bundles with it and `operator-sdk run bundle`
//     serves its catalog with it;
//   - busybox: sh, cat, gzip and tar, for the containers that only unpack (run bundle's
//     decompression, scorecard's untar and storage); also as the mirror's ubi9/ubi:9.8, the
//     decompression image of run bundle-upgrade, which cannot be told another one.
type olmSettings struct {
	binDir     string // olm, catalog, package-server, cpb, copy-content, opm
	chartDir   string // <operator-lifecycle-manager module>/deploy
	helm       string
	olmVersion string
	opmVersion string
}

func olmImageRef(version string) string    { return RegistryHost + "/olm:" + version }
func opmImageRef(version string) string    { return RegistryHost + "/opm:" + version }
func busyboxImageRef() string              { return RegistryHost + "/busybox:stable" }
func (c *Cluster) olmManifests() string    { return c.path("olm", "olm.yaml") }
func (c *Cluster) olmCRDManifests() string { return c.path("olm", "crds.yaml") }

func (c *Cluster) buildOLMImages(s olmSettings) error {
	bb, err := busybox()
	if err != nil {
		return err
	}
	files := append([]layerFile(nil), bb...)
	for _, b := range []string{"olm", "catalog", "package-server", "cpb", "copy-content"} {
		f, err := fileFrom(filepath.Join(s.binDir, b), "/bin/"+b, 0o755)
		if err != nil {
			return fmt.Errorf("%w (make olm-binaries)", err)
		}
		files = append(files, f)
	}
	img, err := image(files, imageSpec{entrypoint: []string{"/bin/olm"}, user: "65532", workdir: "/"})
	if err != nil {
		return err
	}
	if err := c.push(img, olmImageRef(s.olmVersion)); err != nil {
		return err
	}

	opm, err := opmImage(filepath.Join(s.binDir, "opm"), helper(mustExecutable(), "grpc-health-probe"), nil, nil, "")
	if err != nil {
		return err
	}
	if err := c.push(opm, opmImageRef(s.opmVersion)); err != nil {
		return err
	}

	// No entrypoint: scorecard's untar container passes the whole command ("tar", "xvzf", ...).
	bbImg, err := image(bb, imageSpec{cmd: []string{"/bin/sh"}, user: "65532", workdir: "/"})
	if err != nil {
		return err
	}
	if err := c.push(bbImg, busyboxImageRef()); err != nil {
		return err
	}
	// `operator-sdk run bundle-upgrade` has no --decompression-image flag: its registry pod's init
	// container is always this image, which the node pulls through the local mirror.
	return c.push(bbImg, mirrored(runBundleDecompressionImage, true))
}

// runBundleDecompressionImage is the init container image of operator-sdk's registry pods.
const runBundleDecompressionImage = "registry.access.redhat.com/ubi9/ubi:9.8"

// opmImage is opm as an index image; with configs (a file-based catalog) and its pre-built serve
// cache it is a catalog image that serves them (as catalog.Dockerfile builds it). For arm64
// (arch), opm and the probe must be static builds for it, and the image has no busybox (Debian's
// here is amd64's): a catalog image runs opm alone.
func opmImage(opmBin, probe string, configs, cache []layerFile, arch string) (v1.Image, error) {
	files, err := withLibraries(opmBin, "/bin/opm")
	if err != nil {
		return nil, fmt.Errorf("%w (make opm)", err)
	}
	p, err := fileFrom(probe, "/bin/grpc_health_probe", 0o755)
	if err != nil {
		return nil, err
	}
	files = append(files, p)
	if arch != "arm64" {
		bb, err := busybox()
		if err != nil {
			return nil, err
		}
		files = append(files, bb...)
	}
	files = append(append(files, configs...), cache...)
	files = append(files,
		layerFile{path: "/configs", dir: true}, // an index image without a catalog has it empty
		layerFile{path: "/tmp", dir: true, mode: 0o1777},
		layerFile{path: "/etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")})
	spec := imageSpec{entrypoint: []string{"/bin/opm"}, user: "1001", workdir: "/",
		labels: map[string]string{"operators.operatorframework.io.index.configs.v1": "/configs"}}
	if configs != nil {
		spec.cmd = []string{"serve", "/configs", "--cache-dir=/tmp/cache"}
	}
	spec.arch = arch
	return image(files, spec)
}

func (c *Cluster) olmInstall(s olmSettings) error {
	if err := c.buildOLMImages(s); err != nil {
		return err
	}
	if err := mkdirs(c.path("olm")); err != nil {
		return err
	}
	opmRef := opmImageRef(s.opmVersion)
	out, err := exec.Command(s.helm, "template", "olm", filepath.Join(s.chartDir, "chart"),
		"-f", filepath.Join(s.chartDir, "upstream", "values.yaml"), "--include-crds",
		"--set", "olm.image.ref="+olmImageRef(s.olmVersion), "--set", "catalog.image.ref="+olmImageRef(s.olmVersion),
		"--set", "package.image.ref="+olmImageRef(s.olmVersion), "--set", "package.image.pullPolicy=IfNotPresent",
		"--set", "catalog.opmImageArgs=--opmImage="+opmRef, "--set", "catalog.commandArgs=--configmapServerImage="+opmRef,
	).Output()
	if err != nil {
		return fmt.Errorf("render OLM's chart: %w", err)
	}
	crds, rest := splitCRDs(string(out))
	if err := os.WriteFile(c.olmCRDManifests(), []byte(crds), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(c.olmManifests(), []byte(rest), 0o644); err != nil {
		return err
	}
	// Server-side: the CSV CRD is too large for client-side apply's annotation.
	if _, err := c.kubectl("apply", "--server-side", "--force-conflicts", "-f", c.olmCRDManifests()); err != nil {
		return err
	}
	if _, err := c.kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", c.olmCRDManifests()); err != nil {
		return err
	}
	if _, err := c.kubectl("apply", "--server-side", "--force-conflicts", "-f", c.olmManifests()); err != nil {
		return err
	}
	// The chart's upstream catalog points at a public registry this machine cannot reach.
	_, _ = c.kubectl("-n", "olm", "delete", "catalogsource", "operatorhubio-catalog", "--ignore-not-found")
	for _, d := range []string{"olm-operator", "catalog-operator"} {
		if _, err := c.kubectl("-n", "olm", "rollout", "status", "deployment/"+d, "--timeout=180s"); err != nil {
			return err
		}
	}
	if err := waitFor("packageserver CSV Succeeded", 240*time.Second, func() error {
		out, err := c.kubectl("-n", "olm", "get", "csv", "packageserver", "-o", "jsonpath={.status.phase}")
		if err == nil && strings.TrimSpace(out) != "Succeeded" {
			err = fmt.Errorf("phase %q", out)
		}
		return err
	}); err != nil {
		return err
	}
	logf("OLM %s is installed (namespaces olm and operators)", s.olmVersion)
	return nil
}

// installed says whether this tool recorded an install (its manifests file): uninstalling what
// was never installed is nothing to do, as installing twice is. Any other error reading the
// record is returned.
func installed(manifests, what string) (bool, error) {
	_, err := os.Stat(manifests)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		logf("%s is not installed here (no record in %s): nothing to do", what, filepath.Dir(manifests))
		return false, nil
	case err != nil:
		return false, fmt.Errorf("the record of the %s install: %w", what, err)
	}
	return true, nil
}

func (c *Cluster) olmUninstall() error {
	if ok, err := installed(c.olmManifests(), "OLM"); !ok {
		return err
	}
	// CSVs first, so OLM removes what it installed while it still runs.
	_, _ = c.kubectl("delete", "csv", "--all", "--all-namespaces", "--ignore-not-found", "--timeout=120s")
	if _, err := c.kubectl("delete", "--ignore-not-found", "--timeout=180s", "-f", c.olmManifests()); err != nil {
		return err
	}
	if _, err := c.kubectl("delete", "--ignore-not-found", "--timeout=120s", "-f", c.olmCRDManifests()); err != nil {
		return err
	}
	logf("OLM is uninstalled")
	return os.RemoveAll(c.path("olm"))
}

// splitCRDs separates the CustomResourceDefinitions of a multi-document manifest from the rest.
func splitCRDs(manifest string) (crds, rest string) {
	var c, r strings.Builder
	flush := func(doc []string) {
		text := strings.Join(doc, "\n")
		if strings.TrimSpace(text) == "" {
			return
		}
		target := &r
		for _, line := range doc {
			if line == "kind: CustomResourceDefinition" {
				target = &c
			}
		}
		target.WriteString("---\n" + text + "\n")
	}
	var doc []string
	for _, line := range strings.Split(manifest, "\n") {
		if strings.HasPrefix(line, "---") {
			flush(doc)
			doc = nil
			continue
		}
		doc = append(doc, line)
	}
	flush(doc)
	return c.String(), r.String()
}

func mustExecutable() string {
	self, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return self
}
