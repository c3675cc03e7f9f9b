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
	"cmp"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// layerFile is one file of an image layer.
type layerFile struct {
	path string // inside the image, absolute
	mode int64
	data []byte
	link string // a symlink to this target instead of a file
	dir  bool   // an (empty) directory instead of a file
	uid  int    // owner (and group)
}

// epoch gives layers a fixed time, so the same content gives the same digest.
var epoch = time.Unix(0, 0)

func layer(files []layerFile) (v1.Layer, error) {
	sort.SliceStable(files, func(i, j int) bool { return files[i].path < files[j].path })
	// A file two parts of an image add alike (a package's record, os-release) is written once.
	files = slices.CompactFunc(files, func(a, b layerFile) bool { return a.path == b.path })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range files {
		rel := strings.TrimPrefix(f.path, "/")
		if f.dir {
			dirs[rel] = true
		}
		for d := filepath.Dir(rel); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	var dirList []string
	for d := range dirs {
		dirList = append(dirList, d)
	}
	sort.Strings(dirList)
	owners := map[string]int{}
	for _, f := range files {
		for d := filepath.Dir(strings.TrimPrefix(f.path, "/")); d != "."; d = filepath.Dir(d) {
			if f.uid != 0 {
				owners[d] = f.uid
			}
		}
	}
	modes := map[string]int64{}
	for _, f := range files {
		if f.dir && f.mode != 0 {
			modes[strings.TrimPrefix(f.path, "/")] = f.mode
		}
	}
	for _, d := range dirList {
		mode := int64(0o755)
		if m, ok := modes[d]; ok {
			mode = m
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: mode, ModTime: epoch, Uid: owners[d], Gid: owners[d]}); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		if f.dir {
			continue
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.path, "/"), Mode: f.mode, Size: int64(len(f.data)), ModTime: epoch, Uid: f.uid, Gid: f.uid}
		if f.link != "" {
			hdr.Typeflag, hdr.Linkname, hdr.Size, hdr.Mode = tar.TypeSymlink, f.link, 0, 0o777
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
}

// imageSpec says what an image runs, and on which architecture (empty: this machine's).
type imageSpec struct {
	entrypoint []string
	cmd        []string
	user       string
	workdir    string
	labels     map[string]string
	arch       string
}

func image(files []layerFile, spec imageSpec) (v1.Image, error) {
	arch := cmp.Or(spec.arch, runtime.GOARCH)
	if err := builtFor(files, arch); err != nil {
		return nil, err
	}
	l, err := layer(files)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = spec.entrypoint
	cf.Config.Cmd = spec.cmd
	cf.Config.User = spec.user
	cf.Config.WorkingDir = spec.workdir
	cf.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	cf.Config.Labels = spec.labels
	return mutate.ConfigFile(img, cf)
}

// elfMachines are the ELF machines of the architectures the images are built for.
var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// builtFor refuses an image whose executables are not built for arch: a binary of the wrong
// architecture would make a variant that fails only where it runs.
func builtFor(files []layerFile, arch string) error {
	want, ok := elfMachines[arch]
	if !ok {
		return fmt.Errorf("no images for architecture %q", arch)
	}
	for _, f := range files {
		if f.link != "" || f.dir || !bytes.HasPrefix(f.data, []byte(elf.ELFMAG)) {
			continue
		}
		e, err := elf.NewFile(bytes.NewReader(f.data))
		if err != nil {
			return fmt.Errorf("%s: %w", f.path, err)
		}
		if e.Machine != want {
			return fmt.Errorf("%s is built for %s, not for the image's linux/%s", f.path, e.Machine, arch)
		}
	}
	return nil
}

func fileFrom(src, dst string, mode int64) (layerFile, error) {
	b, err := os.ReadFile(src)
	if err != nil {
		return layerFile{}, err
	}
	return layerFile{path: dst, mode: mode, data: b}, nil
}

// treeFrom adds every regular file under srcDir at dstDir.
func treeFrom(srcDir, dstDir string) ([]layerFile, error) {
	var files []layerFile
	err := filepath.WalkDir(srcDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(srcDir, p)
		f, err := fileFrom(p, filepath.Join(dstDir, rel), 0o644)
		files = append(files, f)
		return err
	})
	return files, err
}

// binaryImage is a static binary alone, built for arch (empty: this machine's), run as a non-root
// UID.
func binaryImage(bin, inImage, uid, arch string) (v1.Image, error) {
	f, err := fileFrom(bin, inImage, 0o755)
	if err != nil {
		return nil, err
	}
	return image([]layerFile{f}, imageSpec{entrypoint: []string{inImage}, user: uid, workdir: "/", arch: arch})
}

// operatorImage has the content of the Dockerfile's image: /manager (built for arch; empty: this
// machine's), /watches.yaml and /helm-charts, run as 65532 from /, with the labels and the
// /licenses of the Dockerfile's last stage, its ${VERSION} being version. (The Dockerfile's
// distroless base adds CA certificates, /etc/passwd and tzdata, which the manager does not use.)
// A release's tree from before 1.3.1 has neither: its image is built as it was, to the digest its
// bundle pins.
func operatorImage(manager, repo, version, arch string) (v1.Image, error) {
	stage, err := dockerfileLastStage(filepath.Join(repo, "Dockerfile"), map[string]string{"VERSION": version})
	if err != nil {
		return nil, err
	}
	files := []layerFile{}
	m, err := fileFrom(manager, "/manager", 0o755)
	if err != nil {
		return nil, err
	}
	w, err := fileFrom(filepath.Join(repo, "watches.yaml"), "/watches.yaml", 0o644)
	if err != nil {
		return nil, err
	}
	charts, err := treeFrom(filepath.Join(repo, "helm-charts"), "/helm-charts")
	if err != nil {
		return nil, err
	}
	files = append(append(files, m, w), charts...)
	for _, c := range stage.copies {
		if strings.HasPrefix(c.dst, "/licenses/") {
			l, err := fileFrom(filepath.Join(repo, c.src), c.dst, 0o644)
			if err != nil {
				return nil, err
			}
			files = append(files, l)
		}
	}
	return image(files, imageSpec{entrypoint: []string{"/manager"}, user: "65532:65532", workdir: "/", arch: arch, labels: stage.labels})
}

// platformImage is an image for one architecture of linux.
type platformImage struct {
	arch string
	img  v1.Image
}

// multiArch is the index of images, one per architecture, in the order given: the same images
// give the same index digest. Its manifests are Docker's (as the images'), so it is a Docker
// manifest list, which every registry and runtime reads as an image index. Its descriptors have
// the manifest list's fields only (go-containerregistry's index would add an OCI artifactType).
func multiArch(images ...platformImage) (v1.ImageIndex, error) {
	idx := &manifestList{images: map[v1.Hash]v1.Image{}}
	m := v1.IndexManifest{SchemaVersion: 2, MediaType: types.DockerManifestList}
	for _, p := range images {
		d, err := partial.Descriptor(p.img)
		if err != nil {
			return nil, err
		}
		m.Manifests = append(m.Manifests, v1.Descriptor{MediaType: d.MediaType, Size: d.Size, Digest: d.Digest,
			Platform: &v1.Platform{OS: "linux", Architecture: p.arch}})
		idx.images[d.Digest] = p.img
	}
	raw, err := json.Marshal(m)
	idx.raw = raw
	return idx, err
}

// manifestList is multiArch's index: its manifest as serialized, and its images.
type manifestList struct {
	raw    []byte
	images map[v1.Hash]v1.Image
}

func (l *manifestList) MediaType() (types.MediaType, error) { return types.DockerManifestList, nil }
func (l *manifestList) Digest() (v1.Hash, error)            { return partial.Digest(l) }
func (l *manifestList) Size() (int64, error)                { return partial.Size(l) }
func (l *manifestList) RawManifest() ([]byte, error)        { return l.raw, nil }
func (l *manifestList) IndexManifest() (*v1.IndexManifest, error) {
	return v1.ParseIndexManifest(bytes.NewReader(l.raw))
}
func (l *manifestList) Image(h v1.Hash) (v1.Image, error) {
	if img, ok := l.images[h]; ok {
		return img, nil
	}
	return nil, fmt.Errorf("image %s is not in the index", h)
}
func (l *manifestList) ImageIndex(h v1.Hash) (v1.ImageIndex, error) {
	return nil, fmt.Errorf("index %s is not in the index: a manifest list holds images", h)
}

// artifact is what the image commands make: an image, or an index of images (v1.ImageIndex).
type artifact interface {
	Digest() (v1.Hash, error)
}

// memcachedImage packs Debian's memcached binary with the shared libraries it links, the way
// the official image runs it: the arguments are memcached's flags. Like the official image it has
// a shell (busybox's sh, sleep, rm), which runs memcached with its memory file
// (keepCacheAcross Restarts: the chart's memcached.warmStart).
func memcachedImage() (v1.Image, string, error) {
	bin, err := exec.LookPath("memcached")
	if err != nil {
		return nil, "", fmt.Errorf("memcached is not installed (apt-get install memcached): %w", err)
	}
	files, err := withLibraries(bin, "/usr/bin/memcached")
	if err != nil {
		return nil, "", err
	}
	shell, err := busybox()
	if err != nil {
		return nil, "", err
	}
	files = append(files, shell...)
	version, err := exec.Command(bin, "-V").Output()
	if err != nil {
		return nil, "", err
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(version)), "memcached ")
	img, err := image(files, imageSpec{entrypoint: []string{"/usr/bin/memcached"}, user: "11211:11211", workdir: "/"})
	return img, v, err
}

// mirrored is the local registry's name for an image of a mirrored registry (see registryHostsTOML).
func mirrored(ref string, mirror bool) string {
	if !mirror {
		return ref
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return ref
	}
	// The repository path as the registry knows it (docker.io/memcached is library/memcached).
	repo := RegistryHost + "/" + r.Context().RepositoryStr()
	if d, ok := r.(name.Digest); ok {
		return repo + "@" + d.DigestStr()
	}
	return repo + ":" + r.Identifier()
}

// delivery says where a built image goes: to a registry (the local registry's mirror of the
// reference's registry with mirror; as repository@digest with no tag with byDigest) or, with out,
// into a tarball; and, with digestFile, its digest into that file.
type delivery struct {
	mirror, byDigest bool
	out, digestFile  string
}

func (c *Cluster) deliver(img artifact, ref string, d delivery) error {
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	if d.byDigest {
		r, err := name.ParseReference(ref)
		if err != nil {
			return err
		}
		ref = r.Context().Name() + "@" + digest.String()
	}
	ref = mirrored(ref, d.mirror)
	if d.out == "" {
		err = c.push(img, ref)
	} else {
		err = save(img, ref, d.out)
	}
	if err != nil {
		return err
	}
	if d.digestFile != "" {
		return os.WriteFile(d.digestFile, []byte(digest.String()+"\n"), 0o644)
	}
	return nil
}

// save writes an image as a tarball that names it ref, and an index as an OCI image layout (a
// folder) whose one entry names it ref.
func save(a artifact, ref, out string) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	switch a := a.(type) {
	case v1.Image:
		err = tarball.WriteToFile(out, r, a)
	case v1.ImageIndex:
		if err := os.RemoveAll(out); err != nil {
			return err
		}
		var p layout.Path
		if p, err = layout.Write(out, empty.Index); err == nil {
			err = p.AppendIndex(a, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": r.String()}))
		}
	}
	if err != nil {
		return err
	}
	d, _ := a.Digest()
	logf("built %s (%s) into %s", ref, d, out)
	return nil
}

// fromLayout reads the one image or index an OCI image layout holds (save's).
func fromLayout(dir string) (artifact, error) {
	outer, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	m, err := outer.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("%s holds %d images, not one", dir, len(m.Manifests))
	}
	if d := m.Manifests[0]; d.MediaType.IsIndex() {
		return outer.ImageIndex(d.Digest)
	}
	return outer.Image(m.Manifests[0].Digest)
}

// push writes an image, or an index with its images, to a registry: the local one (trusted
// through the cluster's CA) or any other with the credentials of the Docker config.
func (c *Cluster) push(img artifact, ref string) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	tr, err := caTransport(c.path("pki", "ca.crt"))
	if err != nil && r.Context().RegistryStr() == RegistryHost {
		return err
	}
	if err != nil { // another registry: the system's CAs
		tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	opts := []remote.Option{remote.WithTransport(tr), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	switch a := img.(type) {
	case v1.Image:
		err = remote.Write(r, a, opts...)
	case v1.ImageIndex:
		err = remote.WriteIndex(r, a, opts...)
	}
	if err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	d, _ := img.Digest()
	logf("pushed %s (%s)", ref, d)
	return nil
}

// load imports an image into the node's containerd under ref, for images pods use without a pull.
func (c *Cluster) load(img v1.Image, ref string) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp("", "image-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	f.Close()
	if err := tarball.WriteToFile(f.Name(), r, img); err != nil {
		return err
	}
	out, err := exec.Command("ctr", "--address", c.containerdSocket(), "-n", "k8s.io", "images", "import", f.Name()).CombinedOutput()
	if err != nil {
		return fmt.Errorf("import %s into containerd: %v: %s", ref, err, out)
	}
	logf("loaded %s into containerd", ref)
	return nil
}

// busybox is Debian's static busybox with the applets images here need (sh, cp, cat, gzip, tar, ...).
func busybox() ([]layerFile, error) {
	bb, err := fileFrom("/bin/busybox", "/bin/busybox", 0o755)
	if err != nil {
		return nil, fmt.Errorf("busybox-static is not installed (apt-get install busybox-static): %w", err)
	}
	files, err := debianPackages("/bin/busybox")
	if err != nil {
		return nil, err
	}
	files = append(files, bb)
	// (sed, date, mv, sync: the chart's memory-copy of keepCacheAcross Restarts with persistence.)
	for _, applet := range []string{"sh", "cp", "cat", "gzip", "gunzip", "tar", "sleep", "ls", "mkdir", "rm", "true", "sed", "date", "mv", "sync"} {
		files = append(files, layerFile{path: "/bin/" + applet, link: "busybox"})
	}
	return files, nil
}

// withLibraries adds a dynamically linked binary at dst with the shared libraries ldd lists.
func withLibraries(bin, dst string) ([]layerFile, error) {
	f, err := fileFrom(bin, dst, 0o755)
	if err != nil {
		return nil, err
	}
	files := []layerFile{f}
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		return files, nil // static
	}
	var libs []string
	for _, line := range strings.Split(string(out), "\n") {
		for _, field := range strings.Fields(line) {
			if !strings.HasPrefix(field, "/") {
				continue
			}
			real, err := filepath.EvalSymlinks(field)
			if err != nil {
				return nil, err
			}
			lib, err := fileFrom(real, field, 0o755)
			if err != nil {
				return nil, err
			}
			files = append(files, lib)
			libs = append(libs, field)
		}
	}
	pkgs, err := debianPackages(libs...)
	return append(files, pkgs...), err
}

// debianPackages are the records of the Debian packages that own paths (of this machine, copied
// into an image), as a distroless image keeps them (/var/lib/dpkg/status.d/<package>), and
// Debian's os-release: an SBOM tool (make sbom) then lists those packages at their versions. A
// path no package owns is an error: the SBOM would miss what the image carries.
func debianPackages(paths ...string) ([]layerFile, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	seen := map[string]bool{}
	var files []layerFile
	for _, path := range paths {
		owners, err := debianOwners(path)
		if err != nil {
			return nil, err
		}
		for _, pkg := range owners {
			if seen[pkg] {
				continue
			}
			seen[pkg] = true
			record, err := exec.Command("dpkg-query", "-s", pkg).Output()
			if err != nil {
				return nil, fmt.Errorf("dpkg-query -s %s: %w", pkg, err)
			}
			files = append(files, layerFile{path: "/var/lib/dpkg/status.d/" + strings.Split(pkg, ":")[0], mode: 0o644, data: record})
		}
	}
	osRelease, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return nil, err
	}
	return append(files, layerFile{path: "/etc/os-release", mode: 0o644, data: osRelease}), nil
}

// debianOwners are the packages that own path. With /usr merged, a file a package installed
// under /usr/lib may be found as /lib (and the other way): dpkg knows it by the path the package
// has, so both are asked.
func debianOwners(path string) ([]string, error) {
	alt := "/usr" + path
	if rest, ok := strings.CutPrefix(path, "/usr"); ok {
		alt = rest
	}
	for _, p := range []string{path, alt} {
		out, err := exec.Command("dpkg", "-S", p).Output()
		if err != nil {
			continue // not this path's owner: exit status 1
		}
		var owners []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if owner, _, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(owner, "diversion by") {
				owners = append(owners, strings.Split(owner, ", ")...)
			}
		}
		if len(owners) > 0 {
			return owners, nil
		}
	}
	return nil, fmt.Errorf("no Debian package owns %s (nor %s): an image's SBOM lists the packages of what it carries", path, alt)
}
