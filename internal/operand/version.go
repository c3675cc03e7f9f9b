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

package operand

import (
	"fmt"
	"regexp"
	"strconv"
)

// SupportedVersions names the memcached versions this operator runs: the chart's flags, probes
// and exporter are those of memcached 1.6.
const SupportedVersions = "1.6.x"

// versionTag is a memcached version as image tags spell it: 1.6, 1.6.39, v1.6.39, 1.6.39-alpine.
var versionTag = regexp.MustCompile(`^v?(\d+)\.(\d+)(\.\d+)?([-_+][0-9A-Za-z.+_-]*)?$`)

// ErrUnsupportedVersion is returned for images of a memcached version the operator does not run.
type ErrUnsupportedVersion struct{ Tag, Why string }

func (e *ErrUnsupportedVersion) Error() string {
	return fmt.Sprintf("memcached image tag %q %s; this operator runs memcached %s", e.Tag, e.Why, SupportedVersions)
}

// CheckVersion refuses an image whose tag is not a supported memcached version. An image pinned
// by digest alone has no version to check: the digest is the user's choice and is accepted.
func CheckVersion(img Image) error {
	if img.Tag == "" {
		return nil
	}
	m := versionTag.FindStringSubmatch(img.Tag)
	if m == nil {
		return &ErrUnsupportedVersion{Tag: img.Tag, Why: "is not a memcached version (use a version tag such as 1.6.39, or a digest)"}
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major != 1 || minor != 6 {
		return &ErrUnsupportedVersion{Tag: img.Tag, Why: "is not supported"}
	}
	return nil
}

// Version is what status reports as the version of pods running img: its tag, else its digest.
func Version(img Image) string {
	if img.Tag != "" {
		return img.Tag
	}
	return img.Digest
}
