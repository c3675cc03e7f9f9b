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

// Command cluster runs a real single-node Kubernetes cluster on this machine, without Docker:
// etcd and the control plane, containerd and runc, the kubelet with CNI bridge networking,
// kube-proxy, CoreDNS and a TLS image registry on 127.0.0.1:5000. Every file it writes is under
// the state folder; `down` stops every process it started, by PID, and undoes its host changes.
//
//	cluster up     --state-dir .cluster --bin-dir bin/k8s/v1.35.4
//	cluster status --state-dir .cluster --bin-dir bin/k8s/v1.35.4
//	cluster down   --state-dir .cluster --bin-dir bin/k8s/v1.35.4
//	cluster demo   --state-dir .cluster --bin-dir bin/k8s/v1.35.4 --repo . [--img IMAGE] [--since UNIX-SECONDS]
//	cluster demo-down ...
//	cluster olm-install --state-dir .cluster --bin-dir ... --olm-bin-dir bin/olm --olm-deploy-dir DIR ...
//	cluster olm-uninstall --state-dir .cluster --bin-dir ...
//	cluster image operator  --repo . --ref localhost:5000/memcached-operator:dev
//	cluster image operator  --repo . --manager bin/images/manager --manager-arm64 bin/images/manager-arm64 \
//	                        --ref quay.io/example/memcached-operator --out bin/images/operator --digest-file bin/images/operator.digest
//	cluster image push --layout bin/images/operator --ref quay.io/example/memcached-operator --by-digest --mirror
//	cluster image memcached                              (prints the pushed reference)
//	cluster image binary --bin bin/probe --ref localhost:5000/probe:dev
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: cluster up|down|status|demo|demo-down|netpol-on|netpol-off|storage-on|storage-off|olm-install|olm-uninstall|olmv1-install|olmv1-uninstall|image|registry [flags]")
	os.Exit(2)
}

func run(cmd string, args []string) error {
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	stateDir := fs.String("state-dir", ".cluster", "folder of all cluster state")
	binDir := fs.String("bin-dir", "", "folder of etcd, kube-apiserver, kubelet, ... (make cluster-binaries)")
	self, err := os.Executable()
	if err != nil {
		return err
	}

	switch cmd {
	case "registry":
		addr := fs.String("addr", "127.0.0.1:5000", "listen addresses, comma-separated")
		cert := fs.String("cert", "", "TLS certificate")
		key := fs.String("key", "", "TLS key")
		dir := fs.String("dir", "", "blob folder")
		_ = fs.Parse(args)
		return serveRegistry(*addr, *cert, *key, *dir)
	case "image":
		return imageCommand(fs, stateDir, args)
	case "olmv1-install", "olmv1-uninstall":
		var o olmv1Settings
		fs.StringVar(&o.binDir, "olmv1-bin-dir", "", "folder of operator-controller and catalogd")
		fs.StringVar(&o.manifest, "olmv1-manifest", "", "manifests/standard.yaml of the operator-controller module")
		fs.StringVar(&o.version, "olmv1-version", "", "operator-controller version (image tag)")
		_ = fs.Parse(args)
		c, err := newCluster(*stateDir, *binDir)
		if err != nil {
			return err
		}
		if cmd == "olmv1-uninstall" {
			return c.olmv1Uninstall()
		}
		if o.binDir == "" || o.manifest == "" || o.version == "" {
			return fmt.Errorf("--olmv1-bin-dir, --olmv1-manifest and --olmv1-version are required")
		}
		return c.olmv1Install(o)
	case "olm-install", "olm-uninstall":
		var o olmSettings
		fs.StringVar(&o.binDir, "olm-bin-dir", "", "folder of olm, catalog, package-server, cpb, copy-content and opm")
		fs.StringVar(&o.chartDir, "olm-deploy-dir", "", "the deploy folder of the operator-lifecycle-manager module")
		fs.StringVar(&o.helm, "helm", "helm", "helm binary")
		fs.StringVar(&o.olmVersion, "olm-version", "", "OLM version (image tag)")
		fs.StringVar(&o.opmVersion, "opm-version", "", "opm version (image tag)")
		_ = fs.Parse(args)
		c, err := newCluster(*stateDir, *binDir)
		if err != nil {
			return err
		}
		if cmd == "olm-uninstall" {
			return c.olmUninstall()
		}
		if o.binDir == "" || o.chartDir == "" || o.olmVersion == "" || o.opmVersion == "" {
			return fmt.Errorf("--olm-bin-dir, --olm-deploy-dir, --olm-version and --opm-version are required")
		}
		return c.olmInstall(o)
	case "up", "down", "status", "demo", "demo-down", "netpol-on", "netpol-off", "storage-on", "storage-off":
		repo := fs.String("repo", ".", "the operator's repository (demo)")
		img := fs.String("img", "", "operator image the current context can pull (demo on an existing cluster)")
		localImg := fs.String("local-img", RegistryHost+"/memcached-operator:dev", "operator image built and pushed for the local cluster (demo)")
		since := fs.Int64("since", 0, "when make demo began, in Unix seconds: the demo's times count from it (demo)")
		_ = fs.Parse(args)
		if *binDir == "" {
			return fmt.Errorf("--bin-dir is required")
		}
		c, err := newCluster(*stateDir, *binDir)
		if err != nil {
			return err
		}
		repoDir, err := filepath.Abs(*repo)
		if err != nil {
			return err
		}
		d := &demo{c: c, self: self, repo: repoDir, img: *img, localImg: *localImg, since: time.Now()}
		if *since > 0 {
			d.since = time.Unix(*since, 0)
		}
		switch cmd {
		case "demo":
			return d.run()
		case "demo-down":
			return d.down()
		case "up":
			return c.up(self)
		case "down":
			return c.down()
		case "netpol-on":
			return c.startNetworkPolicy(self)
		case "netpol-off":
			return c.stopNetworkPolicy()
		case "storage-on":
			return c.startStorage(self)
		case "storage-off":
			return c.stopStorage()
		default:
			return c.status()
		}
	default:
		usage()
	}
	return nil
}

func imageCommand(fs *flag.FlagSet, stateDir *string, args []string) error {
	if len(args) < 1 {
		return fmt.Errorf("usage: cluster image operator|memcached|binary|dockerfile|catalog|push [flags]")
	}
	which := args[0]
	repo := fs.String("repo", ".", "the operator's repository (operator image)")
	manager := fs.String("manager", "", "the manager binary, built with CGO_ENABLED=0 (operator image)")
	version := fs.String("version", "", "the operator's version, for the ${VERSION} of its Dockerfile's labels (operator image)")
	managerArm64 := fs.String("manager-arm64", "", "the manager built for linux/arm64: the operator image is then an index of linux/amd64 (--manager) and linux/arm64")
	bin := fs.String("bin", "", "a static binary to run as the image's entrypoint (binary image)")
	binArm64 := fs.String("bin-arm64", "", "the same binary built for linux/arm64: the image is then an index of linux/amd64 and linux/arm64 (binary image)")
	dockerfile := fs.String("dockerfile", "", "a FROM scratch Dockerfile of LABEL and COPY lines (dockerfile image)")
	opm := fs.String("opm", "", "the opm binary (catalog image)")
	opmArm64 := fs.String("opm-arm64", "", "opm built for linux/arm64, static (CGO_ENABLED=0: serving a file-based catalog needs no sqlite): the catalog image is then an index of linux/amd64 and linux/arm64")
	probeArm64 := fs.String("probe-arm64", "", "grpc_health_probe built for linux/arm64 (catalog image with --opm-arm64)")
	configs := fs.String("configs", "", "a file-based catalog folder (catalog image)")
	out := fs.String("out", "", "write the image as a tarball here instead of pushing it, an index of several architectures as an OCI image layout folder (operator, binary, dockerfile, catalog)")
	digestFile := fs.String("digest-file", "", "also write the image's digest (sha256:...) to this file (operator, binary, dockerfile, push)")
	byDigest := fs.Bool("by-digest", false, "push as --ref's repository @ the image's digest, with no tag (operator, push)")
	tarballPath := fs.String("tarball", "", "an image tarball to push (push)")
	layoutPath := fs.String("layout", "", "an OCI image layout folder, as --out writes an index, to push (push)")
	sbomPrefix := fs.String("sbom", "", "attach to each pushed image the SBOM <sbom>.linux-<arch>.spdx.json (make sbom writes them), as an OCI artifact that refers to it (push)")
	mirror := fs.Bool("mirror", false, "push to the local registry's mirror of --ref's registry, e.g. quay.io/x/y:t to localhost:5000/x/y:t (operator, binary, memcached, push)")
	ref := fs.String("ref", "", "image reference to push (operator, binary, dockerfile, catalog; memcached: a name to stand in for)")
	registry := fs.String("registry", RegistryHost, "registry to push to (memcached image)")
	_ = fs.Parse(args[1:])
	abs, err := filepath.Abs(*stateDir)
	if err != nil {
		return err
	}
	c := &Cluster{StateDir: abs}
	switch which {
	case "operator":
		if *ref == "" || *manager == "" {
			return fmt.Errorf("--ref and --manager are required")
		}
		if *managerArm64 == "" {
			// One image, as every release before 1.3.0 was built (their bundles pin it).
			img, err := operatorImage(*manager, *repo, *version, "")
			if err != nil {
				return err
			}
			return c.deliver(img, *ref, delivery{mirror: *mirror, byDigest: *byDigest, out: *out, digestFile: *digestFile})
		}
		amd64, err := operatorImage(*manager, *repo, *version, "amd64")
		if err != nil {
			return err
		}
		arm64, err := operatorImage(*managerArm64, *repo, *version, "arm64")
		if err != nil {
			return err
		}
		idx, err := multiArch(platformImage{"amd64", amd64}, platformImage{"arm64", arm64})
		if err != nil {
			return err
		}
		return c.deliver(idx, *ref, delivery{mirror: *mirror, byDigest: *byDigest, out: *out, digestFile: *digestFile})
	case "binary":
		if *ref == "" || *bin == "" {
			return fmt.Errorf("--ref and --bin are required")
		}
		inImage := "/usr/local/bin/" + filepath.Base(*bin)
		if *binArm64 == "" {
			img, err := binaryImage(*bin, inImage, "65532", "")
			if err != nil {
				return err
			}
			return c.deliver(img, *ref, delivery{mirror: *mirror, out: *out, digestFile: *digestFile})
		}
		amd64, err := binaryImage(*bin, inImage, "65532", "amd64")
		if err != nil {
			return err
		}
		arm64, err := binaryImage(*binArm64, inImage, "65532", "arm64")
		if err != nil {
			return err
		}
		idx, err := multiArch(platformImage{"amd64", amd64}, platformImage{"arm64", arm64})
		if err != nil {
			return err
		}
		return c.deliver(idx, *ref, delivery{mirror: *mirror, out: *out, digestFile: *digestFile})
	case "dockerfile":
		if *ref == "" || *dockerfile == "" {
			return fmt.Errorf("--ref and --dockerfile are required")
		}
		img, err := scratchDockerfileImage(*dockerfile, *repo)
		if err != nil {
			return err
		}
		return c.deliver(img, *ref, delivery{out: *out, digestFile: *digestFile})
	case "catalog":
		if *ref == "" || *opm == "" || *configs == "" {
			return fmt.Errorf("--ref, --opm and --configs are required")
		}
		self, err := os.Executable()
		if err != nil {
			return err
		}
		if *opmArm64 == "" {
			img, err := catalogImage(*opm, helper(self, "grpc-health-probe"), *configs)
			if err != nil {
				return err
			}
			return c.deliver(img, *ref, delivery{out: *out})
		}
		if *probeArm64 == "" {
			return fmt.Errorf("--opm-arm64 needs --probe-arm64")
		}
		idx, err := catalogIndex(*opm, helper(self, "grpc-health-probe"), *opmArm64, *probeArm64, *configs)
		if err != nil {
			return err
		}
		return c.deliver(idx, *ref, delivery{out: *out})
	case "push":
		if *ref == "" || (*tarballPath == "") == (*layoutPath == "") {
			return fmt.Errorf("--ref and one of --tarball and --layout are required")
		}
		var img artifact
		var err error
		if *layoutPath != "" {
			img, err = fromLayout(*layoutPath)
		} else {
			img, err = tarball.ImageFromPath(*tarballPath, nil)
		}
		if err != nil {
			return err
		}
		if err := c.deliver(img, *ref, delivery{mirror: *mirror, byDigest: *byDigest, digestFile: *digestFile}); err != nil {
			return err
		}
		if *sbomPrefix == "" {
			return nil
		}
		return c.attachSBOMs(img, mirrored(*ref, *mirror), *sbomPrefix)
	case "memcached":
		img, version, err := memcachedImage()
		if err != nil {
			return err
		}
		if *ref != "" {
			// A stand-in for an official memcached image (e.g. docker.io/library/memcached:1.6.39)
			// on a machine that cannot pull it: Debian's memcached under that name in the mirror.
			return c.push(img, mirrored(*ref, *mirror))
		}
		r := fmt.Sprintf("%s/memcached:%s", *registry, version)
		if err := c.push(img, r); err != nil {
			return err
		}
		fmt.Println(r)
		return nil
	}
	return fmt.Errorf("unknown image %q: operator, memcached, binary, dockerfile, catalog or push", which)
}
