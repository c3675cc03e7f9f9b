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
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// scratchDockerfileImage builds the image a `FROM scratch` Dockerfile with LABEL and COPY lines
// describes (bundle.Dockerfile), so the Dockerfile stays the one description of the image.
func scratchDockerfileImage(dockerfile, contextDir string) (v1.Image, error) {
	f, err := os.Open(dockerfile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	labels := map[string]string{}
	var files []layerFile
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(line, "#") {
			continue
		}
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			if len(fields) != 2 || fields[1] != "scratch" {
				return nil, fmt.Errorf("%s: only FROM scratch is supported, not %q", dockerfile, line)
			}
		case "LABEL":
			kvs, err := labelPairs(strings.TrimSpace(line[len(fields[0]):]))
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %w", dockerfile, line, err)
			}
			for _, kv := range kvs {
				labels[kv[0]] = kv[1]
			}
		case "COPY":
			if len(fields) != 3 {
				return nil, fmt.Errorf("%s: COPY %q must have one source and one destination", dockerfile, line)
			}
			tree, err := treeFrom(filepath.Join(contextDir, fields[1]), fields[2])
			if err != nil {
				return nil, err
			}
			files = append(files, tree...)
		default:
			return nil, fmt.Errorf("%s: unsupported instruction %q", dockerfile, fields[0])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return image(files, imageSpec{labels: labels})
}

// dockerfileStage is what the project's image build takes from a Dockerfile's last stage: its
// labels (nil: none) and its COPY lines from the build context (not --from another stage).
type dockerfileStage struct {
	labels map[string]string
	copies []struct{ src, dst string }
}

// dockerfileLastStage reads the last stage of a Dockerfile: LABEL lines (values in double quotes
// may hold spaces; ${ARG} is taken from args, and an ARG the stage declares must be given there)
// and COPY lines. Other instructions are left to the builds that need them.
func dockerfileLastStage(dockerfile string, args map[string]string) (dockerfileStage, error) {
	raw, err := os.ReadFile(dockerfile)
	if err != nil {
		return dockerfileStage{}, err
	}
	var st dockerfileStage
	declared := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		instr, rest, _ := strings.Cut(line, " ")
		switch strings.ToUpper(instr) {
		case "FROM":
			st, declared = dockerfileStage{}, map[string]bool{}
		case "ARG":
			name, _, _ := strings.Cut(strings.TrimSpace(rest), "=")
			declared[name] = true
		case "LABEL":
			kvs, err := labelPairs(rest)
			if err != nil {
				return dockerfileStage{}, fmt.Errorf("%s: %q: %w", dockerfile, line, err)
			}
			for _, kv := range kvs {
				var missing []string
				v := os.Expand(kv[1], func(name string) string {
					if !declared[name] || args[name] == "" {
						missing = append(missing, name)
					}
					return args[name]
				})
				if len(missing) > 0 {
					return dockerfileStage{}, fmt.Errorf("%s: label %s uses %v, which is not given (--version)", dockerfile, kv[0], missing)
				}
				if st.labels == nil {
					st.labels = map[string]string{}
				}
				st.labels[kv[0]] = v
			}
		case "COPY":
			f := strings.Fields(rest)
			if len(f) == 2 && !strings.HasPrefix(f[0], "--") {
				st.copies = append(st.copies, struct{ src, dst string }{f[0], f[1]})
			}
		}
	}
	return st, nil
}

// labelPairs splits a LABEL line's key=value pairs; a value may be double-quoted, with \" inside.
func labelPairs(s string) ([][2]string, error) {
	var pairs [][2]string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		key, rest, ok := strings.Cut(s, "=")
		if !ok || key == "" || strings.ContainsAny(key, " \t\"") {
			return nil, fmt.Errorf("%q is not key=value", s)
		}
		var value string
		if strings.HasPrefix(rest, `"`) {
			end := 1
			for ; end < len(rest) && rest[end] != '"'; end++ {
				if rest[end] == '\\' {
					end++
				}
			}
			if end >= len(rest) {
				return nil, fmt.Errorf("label %s: unterminated quote", key)
			}
			unquoted, err := strconv.Unquote(rest[:end+1])
			if err != nil {
				return nil, fmt.Errorf("label %s: %w", key, err)
			}
			value, s = unquoted, rest[end+1:]
		} else {
			value, s, _ = strings.Cut(rest, " ")
		}
		pairs = append(pairs, [2]string{key, value})
	}
	return pairs, nil
}

// catalogImage serves a file-based catalog with opm, with the serve cache built in (opm checks its
// integrity at start), owned by the UID the catalog pod runs as.
func catalogImage(opmBin, probe, configsDir string) (v1.Image, error) {
	configs, cache, err := catalogFiles(opmBin, configsDir)
	if err != nil {
		return nil, err
	}
	return opmImage(opmBin, probe, configs, cache, "")
}

// catalogIndex is catalogImage for linux/amd64 (opmBin, probe: this machine's) and linux/arm64
// (static opmArm64 and probeArm64), with the same catalog and cache (the cache's digest is of its
// content alone).
func catalogIndex(opmBin, probe, opmArm64, probeArm64, configsDir string) (v1.ImageIndex, error) {
	configs, cache, err := catalogFiles(opmBin, configsDir)
	if err != nil {
		return nil, err
	}
	amd64, err := opmImage(opmBin, probe, configs, cache, "amd64")
	if err != nil {
		return nil, err
	}
	arm64, err := opmImage(opmArm64, probeArm64, configs, cache, "arm64")
	if err != nil {
		return nil, err
	}
	return multiArch(platformImage{"amd64", amd64}, platformImage{"arm64", arm64})
}

// catalogFiles are a catalog's files and its serve cache, which opmBin builds.
func catalogFiles(opmBin, configsDir string) (configs, cache []layerFile, err error) {
	cacheDir, err := os.MkdirTemp("", "opm-cache-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(cacheDir)
	if out, err := exec.Command(opmBin, "serve", configsDir, "--cache-dir", cacheDir, "--cache-only").CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("opm serve --cache-only: %v: %s", err, out)
	}
	if configs, err = treeFrom(configsDir, "/configs"); err != nil {
		return nil, nil, err
	}
	if cache, err = treeFrom(cacheDir, "/tmp/cache"); err != nil {
		return nil, nil, err
	}
	for i := range cache {
		cache[i].uid = 1001
	}
	return configs, cache, nil
}
