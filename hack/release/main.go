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

// Command release keeps releases.yaml, the list of released versions and the commit each was
// built from, and builds what depends on it:
//
//	release catalog -opm bin/olm/opm -cluster-tool bin/cluster -version 0.2.0 -image-template 'quay.io/x/memcached-operator-bundle@{{.Digest}}' -out catalog
//	    the file-based catalog: catalog-template.yaml's package, one channel per channel name
//	    with every release in order (each replaces the one before and skips all older ones), and
//	    the bundle of every release: the current version's from bundle/, earlier ones from
//	    their commits (git archive), each named by the digest of its bundle image as the
//	    cluster tool builds it from bundle.Dockerfile (reproducibly: bundle-build publishes
//	    that image)
//	release bump -version 0.2.0 -created-at 2026-12-01T00:00:00Z -channels candidate,stable
//	    sets VERSION and CREATED_AT in the Makefile and the chart's version, and appends the
//	    version to releases.yaml
//	release record -version 0.2.0 -commit SHA
//	    records the commit a version was built from
//	release versions [-except 0.2.0]     prints the released versions, oldest first
//	release checkout -version 0.1.0 -dir DIR
//	    writes the tree of a released version to DIR (to rebuild its images)
//
// Git commands run in the current directory; GIT_DIR points them elsewhere (the stale-file check
// regenerates in a scratch copy without .git).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"
)

const (
	releasesFile = "releases.yaml"
	templateFile = "catalog-template.yaml"
	makefile     = "Makefile"
	chartFile    = "helm-charts/memcached/Chart.yaml"
	header       = `# Every released version of memcached-operator, oldest first, and the commit it was built from.
# ` + "`make release VERSION=x.y.z`" + ` appends to it. ` + "`make catalog`" + ` builds the upgrade graph from it: each
# version replaces the one before and skips any older one (olm.skipRange), and the bundles of
# earlier versions are rendered from their commits. The end-to-end tests rebuild the images of
# earlier versions from those commits too.
`
)

// Release is one released version.
type Release struct {
	Version string `json:"version"`
	// Commit is the commit the version was built from; empty between `release bump` and
	// `release record`.
	Commit   string   `json:"commit,omitempty"`
	Channels []string `json:"channels"`
}

type releaseList struct {
	Releases []Release `json:"releases"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: release catalog|bump|record|versions|checkout [flags]")
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "catalog":
		err = catalogCmd(args)
	case "bump":
		err = bumpCmd(args)
	case "record":
		err = recordCmd(args)
	case "versions":
		err = versionsCmd(args)
	case "checkout":
		err = checkoutCmd(args)
	default:
		err = fmt.Errorf("unknown command %q: catalog, bump, record, versions or checkout", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func readReleases() ([]Release, error) {
	raw, err := os.ReadFile(releasesFile)
	if err != nil {
		return nil, err
	}
	var list releaseList
	if err := yaml.UnmarshalStrict(raw, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", releasesFile, err)
	}
	if err := validate(list.Releases); err != nil {
		return nil, fmt.Errorf("%s: %w", releasesFile, err)
	}
	return list.Releases, nil
}

// validate checks that versions are semver, strictly increasing, and that every release but the
// newest has its commit recorded.
func validate(releases []Release) error {
	if len(releases) == 0 {
		return fmt.Errorf("no release listed")
	}
	var prev *semver.Version
	for i, r := range releases {
		v, err := semver.StrictNewVersion(r.Version)
		if err != nil {
			return fmt.Errorf("version %q: %w", r.Version, err)
		}
		if prev != nil && !v.GreaterThan(prev) {
			return fmt.Errorf("version %s follows %s: versions must increase", v, prev)
		}
		if r.Commit == "" && i < len(releases)-1 {
			return fmt.Errorf("version %s has no commit recorded", r.Version)
		}
		if len(r.Channels) == 0 {
			return fmt.Errorf("version %s is in no channel", r.Version)
		}
		prev = v
	}
	return nil
}

func writeReleases(releases []Release) error {
	if err := validate(releases); err != nil {
		return err
	}
	raw, err := yaml.Marshal(releaseList{Releases: releases})
	if err != nil {
		return err
	}
	return os.WriteFile(releasesFile, append([]byte(header), raw...), 0o644)
}

// Channels builds the olm.channel documents of a package from its releases: in every channel a
// release replaces the release before it in that channel and skips every older one, so that a
// cluster on any earlier version upgrades straight to the newest.
func Channels(pkg string, releases []Release) []map[string]any {
	var names []string
	entries := map[string][]map[string]any{}
	for _, r := range releases {
		for _, ch := range r.Channels {
			prior := entries[ch]
			if prior == nil {
				names = append(names, ch)
			}
			e := map[string]any{"name": csvName(pkg, r.Version)}
			if len(prior) > 0 {
				e["replaces"] = prior[len(prior)-1]["name"]
				first := strings.TrimPrefix(prior[0]["name"].(string), pkg+".v")
				e["skipRange"] = fmt.Sprintf(">=%s <%s", first, r.Version)
			}
			entries[ch] = append(prior, e)
		}
	}
	var docs []map[string]any
	for _, ch := range names {
		docs = append(docs, map[string]any{"schema": "olm.channel", "package": pkg, "name": ch, "entries": entries[ch]})
	}
	return docs
}

func csvName(pkg, version string) string { return pkg + ".v" + version }

func catalogCmd(args []string) error {
	fs := flag.NewFlagSet("catalog", flag.ExitOnError)
	opm := fs.String("opm", "", "the opm binary")
	version := fs.String("version", "", "the current version (its bundle is ./bundle)")
	bundleDir := fs.String("bundle", "bundle", "the current version's bundle directory")
	imageTemplate := fs.String("image-template", "", "bundle image reference: {{.Version}} is the version, {{.Digest}} the bundle image's digest")
	clusterTool := fs.String("cluster-tool", "", "the cluster tool, which builds the bundle images for {{.Digest}}")
	out := fs.String("out", "catalog", "the catalog directory to write")
	_ = fs.Parse(args)
	if *opm == "" || *version == "" || *imageTemplate == "" {
		return fmt.Errorf("-opm, -version and -image-template are required")
	}
	if strings.Contains(*imageTemplate, digestField) && *clusterTool == "" {
		return fmt.Errorf("-image-template names %s: -cluster-tool is required", digestField)
	}
	releases, err := readReleases()
	if err != nil {
		return err
	}
	if last := releases[len(releases)-1].Version; last != *version {
		return fmt.Errorf("VERSION is %s but the newest release in %s is %s: release with `make release VERSION=%s`", *version, releasesFile, last, *version)
	}
	tmpl, err := os.ReadFile(templateFile)
	if err != nil {
		return err
	}
	var pkg struct {
		Schema string `json:"schema"`
		Name   string `json:"name"`
	}
	if err := yaml.Unmarshal(tmpl, &pkg); err != nil || pkg.Schema != "olm.package" || pkg.Name == "" {
		return fmt.Errorf("%s must hold one olm.package document (%v)", templateFile, err)
	}

	var doc bytes.Buffer
	doc.Write(bytes.TrimSpace(tmpl))
	doc.WriteString("\n")
	for _, ch := range Channels(pkg.Name, releases) {
		raw, err := yaml.Marshal(ch)
		if err != nil {
			return err
		}
		doc.WriteString("---\n")
		doc.Write(raw)
	}
	scratch, err := os.MkdirTemp("", "release-bundles-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	for _, r := range releases {
		dir, tree := *bundleDir, "."
		if r.Version != *version {
			tree = filepath.Join(scratch, r.Version)
			if err := checkout(r, tree, "bundle", bundleDockerfile); err != nil {
				return err
			}
			dir = filepath.Join(tree, "bundle")
		}
		ref := *imageTemplate
		if strings.Contains(ref, digestField) {
			digest, err := bundleDigest(*clusterTool, tree, filepath.Join(scratch, "digest-"+r.Version))
			if err != nil {
				return fmt.Errorf("the bundle image of %s: %w", r.Version, err)
			}
			ref = strings.ReplaceAll(ref, digestField, digest)
		}
		rendered, err := run(*opm, "render", dir, "--output", "yaml", "--alpha-image-ref-template", ref)
		if err != nil {
			return fmt.Errorf("render the bundle of %s: %w", r.Version, err)
		}
		doc.WriteString("---\n")
		doc.Write(bytes.TrimPrefix(bytes.TrimSpace(rendered), []byte("---\n")))
		doc.WriteString("\n")
	}

	pkgDir := filepath.Join(*out, pkg.Name)
	if err := os.MkdirAll(pkgDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(pkgDir, "index.yaml"), doc.Bytes(), 0o644); err != nil {
		return err
	}
	if _, err := run(*opm, "validate", *out); err != nil {
		return fmt.Errorf("opm validate %s: %w", *out, err)
	}
	return nil
}

const (
	digestField      = "{{.Digest}}"
	bundleDockerfile = "bundle.Dockerfile"
)

// bundleDigest builds the bundle image of a tree from its bundle.Dockerfile, as bundle-build
// does, and returns its digest.
func bundleDigest(clusterTool, tree, scratch string) (string, error) {
	if _, err := run(clusterTool, "image", "dockerfile", "--repo", tree, "--dockerfile", filepath.Join(tree, bundleDockerfile),
		"--ref", "memcached-operator-bundle:digest", "--out", scratch+".tar", "--digest-file", scratch); err != nil {
		return "", err
	}
	d, err := os.ReadFile(scratch)
	return strings.TrimSpace(string(d)), err
}

// checkout writes the tree (or the given paths) of a release's commit to dir.
func checkout(r Release, dir string, paths ...string) error {
	if r.Commit == "" {
		return fmt.Errorf("version %s has no commit recorded", r.Version)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	archive, err := run("git", append([]string{"archive", "--format=tar", r.Commit}, paths...)...)
	if err != nil {
		return fmt.Errorf("version %s: %w", r.Version, err)
	}
	untar := exec.Command("tar", "-x", "-C", dir)
	untar.Stdin = bytes.NewReader(archive)
	if out, err := untar.CombinedOutput(); err != nil {
		return fmt.Errorf("untar version %s: %v: %s", r.Version, err, out)
	}
	return nil
}

func bumpCmd(args []string) error {
	fs := flag.NewFlagSet("bump", flag.ExitOnError)
	version := fs.String("version", "", "the new version")
	createdAt := fs.String("created-at", "", "the release date (the CSV's createdAt), RFC 3339")
	channels := fs.String("channels", "", "the channels of the new version, comma-separated")
	_ = fs.Parse(args)
	if *version == "" || *createdAt == "" || *channels == "" {
		return fmt.Errorf("-version, -created-at and -channels are required")
	}
	releases, err := readReleases()
	if err != nil {
		return err
	}
	last := releases[len(releases)-1]
	if last.Version == *version {
		return nil // re-cutting the newest release: only its commit changes (release record)
	}
	if last.Commit == "" {
		return fmt.Errorf("version %s has no commit recorded yet: release record -version %s -commit SHA", last.Version, last.Version)
	}
	releases = append(releases, Release{Version: *version, Channels: strings.Split(*channels, ",")})
	if err := writeReleases(releases); err != nil {
		return err
	}
	mk, err := os.ReadFile(makefile)
	if err != nil {
		return err
	}
	for name, value := range map[string]string{"VERSION": *version, "CREATED_AT": *createdAt} {
		re := regexp.MustCompile(`(?m)^` + name + ` \?= .*$`)
		if !re.Match(mk) {
			return fmt.Errorf("%s has no line %q", makefile, name+" ?= ...")
		}
		mk = re.ReplaceAll(mk, []byte(name+" ?= "+value))
	}
	if err := os.WriteFile(makefile, mk, 0o644); err != nil {
		return err
	}
	// The chart ships with the operator: its version is the release's.
	chartYAML, err := os.ReadFile(chartFile)
	if err != nil {
		return err
	}
	re := regexp.MustCompile(`(?m)^version: .*$`)
	if !re.Match(chartYAML) {
		return fmt.Errorf("%s has no line %q", chartFile, "version: ...")
	}
	return os.WriteFile(chartFile, re.ReplaceAll(chartYAML, []byte("version: "+*version)), 0o644)
}

func recordCmd(args []string) error {
	fs := flag.NewFlagSet("record", flag.ExitOnError)
	version := fs.String("version", "", "the released version")
	commit := fs.String("commit", "", "the commit it was built from")
	_ = fs.Parse(args)
	releases, err := readReleases()
	if err != nil {
		return err
	}
	sha, err := run("git", "rev-parse", "--verify", *commit+"^{commit}")
	if err != nil {
		return err
	}
	for i := range releases {
		if releases[i].Version == *version {
			if i < len(releases)-1 {
				return fmt.Errorf("version %s has newer releases; its commit is final", *version)
			}
			releases[i].Commit = strings.TrimSpace(string(sha))
			return writeReleases(releases)
		}
	}
	return fmt.Errorf("version %s is not in %s", *version, releasesFile)
}

func versionsCmd(args []string) error {
	fs := flag.NewFlagSet("versions", flag.ExitOnError)
	except := fs.String("except", "", "leave this version out")
	_ = fs.Parse(args)
	releases, err := readReleases()
	if err != nil {
		return err
	}
	for _, r := range releases {
		if r.Version != *except {
			fmt.Println(r.Version)
		}
	}
	return nil
}

func checkoutCmd(args []string) error {
	fs := flag.NewFlagSet("checkout", flag.ExitOnError)
	version := fs.String("version", "", "the released version")
	dir := fs.String("dir", "", "where to write its tree")
	_ = fs.Parse(args)
	if *version == "" || *dir == "" {
		return fmt.Errorf("-version and -dir are required")
	}
	releases, err := readReleases()
	if err != nil {
		return err
	}
	for _, r := range releases {
		if r.Version == *version {
			if err := os.RemoveAll(*dir); err != nil {
				return err
			}
			return checkout(r, *dir)
		}
	}
	return fmt.Errorf("version %s is not in %s", *version, releasesFile)
}

func run(name string, args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}
