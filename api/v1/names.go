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

package v1

import (
	"fmt"
	"regexp"
)

// The names a Memcached and a MemcachedBackup may have. controller-gen has no marker for
// metadata.name, so `make manifests` writes these into the CRDs (hack/crdnames): the API server
// refuses other names at admission. The operator checks CRs made before these rules with
// ValidName, and says why it cannot reconcile them.
const (
	// MemcachedNameMaxLength is Helm's limit for release names: a Memcached's name is its
	// release's, and its objects are named <name>-memcached (at most 63 characters).
	MemcachedNameMaxLength = 53
	// MemcachedNamePattern is a DNS-1035 label: the release's Service is named after the
	// Memcached, and Service names start with a letter and have no dots.
	MemcachedNamePattern = `^[a-z]([-a-z0-9]*[a-z0-9])?$`

	// MemcachedBackupNameMaxLength and MemcachedBackupNamePattern make a DNS-1123 label: the
	// name is the backup's Deployment's and a label value of its pods.
	MemcachedBackupNameMaxLength = 63
	MemcachedBackupNamePattern   = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
)

var (
	memcachedName       = regexp.MustCompile(MemcachedNamePattern)
	memcachedBackupName = regexp.MustCompile(MemcachedBackupNamePattern)
)

// ValidName says why name cannot be the name of a resource of kind (Memcached or
// MemcachedBackup), or returns nil.
func ValidName(kind, name string) error {
	max, pattern := MemcachedNameMaxLength, memcachedName
	what := "a lowercase DNS-1035 label (letters, digits and '-', starting with a letter; no dots): its Service is named after it"
	if kind == "MemcachedBackup" {
		max, pattern = MemcachedBackupNameMaxLength, memcachedBackupName
		what = "a lowercase DNS-1123 label (letters, digits and '-'; no dots): its Deployment and pod labels are named after it"
	}
	switch {
	case len(name) > max:
		return fmt.Errorf("the name of a %s can have at most %d characters, %q has %d", kind, max, name, len(name))
	case !pattern.MatchString(name):
		return fmt.Errorf("the name of a %s must be %s, not %q", kind, what, name)
	}
	return nil
}
