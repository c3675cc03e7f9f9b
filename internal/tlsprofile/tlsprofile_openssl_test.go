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

package tlsprofile

import (
	"slices"
	"testing"
)

// memcached takes its TLS 1.2 ciphers by OpenSSL's names: every cipher a profile lets Go use has
// one, in the same order.
func TestOpenSSLNamesOfTheProfiles(t *testing.T) {
	for _, name := range []string{"Old", "Intermediate", "Modern"} {
		s, err := Named(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.OpenSSLCiphers) != len(s.Ciphers) {
			t.Errorf("%s: %d ciphers, %d OpenSSL names (%v)", name, len(s.Ciphers), len(s.OpenSSLCiphers), s.OpenSSLCiphers)
		}
	}
	s, _ := Named("Intermediate")
	if !slices.Contains(s.OpenSSLCiphers, "ECDHE-ECDSA-AES128-GCM-SHA256") || slices.Contains(s.OpenSSLCiphers, "TLS_AES_128_GCM_SHA256") {
		t.Errorf("Intermediate's OpenSSL names: %v", s.OpenSSLCiphers)
	}
}
