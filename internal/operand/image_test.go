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

package operand_test

import (
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/example/memcached-operator/internal/operand"
)

func TestParseImage(t *testing.T) {
	digest := "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		ref     string
		want    operand.Image
		wantErr bool
	}{
		{ref: "memcached:1.6.38", want: operand.Image{Repository: "memcached", Tag: "1.6.38"}},
		{ref: "docker.io/library/memcached:1.6.38", want: operand.Image{Repository: "docker.io/library/memcached", Tag: "1.6.38"}},
		{ref: "127.0.0.1:5000/memcached:1.6.38", want: operand.Image{Repository: "127.0.0.1:5000/memcached", Tag: "1.6.38"}},
		{ref: "registry.local/memcached@" + digest, want: operand.Image{Repository: "registry.local/memcached", Digest: digest}},
		{ref: "registry.local:443/memcached:1.6.38@" + digest, want: operand.Image{Repository: "registry.local:443/memcached", Tag: "1.6.38", Digest: digest}},
		{ref: "127.0.0.1:5000/memcached", wantErr: true}, // no tag: would float to latest
		{ref: ":1.6", wantErr: true},
		{ref: "memcached@md5:abc", wantErr: true},
	}
	for _, tt := range tests {
		got, err := operand.ParseImage(tt.ref)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseImage(%q) error = %v, want error %v", tt.ref, err, tt.wantErr)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseImage(%q) = %+v, want %+v", tt.ref, got, tt.want)
		}
		if err == nil && tt.want.Digest == "" && got.String() != tt.ref {
			t.Errorf("String() = %q, want %q", got.String(), tt.ref)
		}
	}
}

func TestDefaultImage(t *testing.T) {
	chrt, err := loader.Load(filepath.Join("..", "..", "helm-charts", "memcached"))
	if err != nil {
		t.Fatal(err)
	}

	img, overridden, err := operand.DefaultImage(chrt.Values, "")
	if err != nil || overridden {
		t.Fatalf("DefaultImage = %v, %v, %v", img, overridden, err)
	}
	if img.Repository != "docker.io/library/memcached" || img.Tag != chrt.Metadata.AppVersion {
		t.Errorf("the chart's image %v must be the official memcached at the chart's appVersion %s", img, chrt.Metadata.AppVersion)
	}

	img, overridden, err = operand.DefaultImage(chrt.Values, "mirror.local/memcached:1.6.38")
	if err != nil || !overridden || img.String() != "mirror.local/memcached:1.6.38" {
		t.Errorf("with %s set: DefaultImage = %v, %v, %v", operand.RelatedImageEnv, img, overridden, err)
	}

	if _, _, err := operand.DefaultImage(chrt.Values, "mirror.local/memcached"); err == nil {
		t.Errorf("an untagged %s must be refused", operand.RelatedImageEnv)
	}

	img, overridden, err = operand.DefaultExporterImage(chrt.Values, "")
	if err != nil || overridden || img.String() != "docker.io/prom/memcached-exporter:v0.15.3" {
		t.Errorf("DefaultExporterImage = %v, %v, %v; want the chart's metrics.image", img, overridden, err)
	}
	img, overridden, err = operand.DefaultExporterImage(chrt.Values, "mirror.local/exporter@sha256:"+strings.Repeat("ab", 32))
	if err != nil || !overridden || img.Digest == "" || img.Repository != "mirror.local/exporter" {
		t.Errorf("with %s set: DefaultExporterImage = %v, %v, %v", operand.ExporterRelatedImageEnv, img, overridden, err)
	}
	if _, _, err := operand.DefaultExporterImage(chrt.Values, "mirror.local/exporter"); err == nil || !strings.Contains(err.Error(), operand.ExporterRelatedImageEnv) {
		t.Errorf("an untagged %s must be refused, naming the variable: %v", operand.ExporterRelatedImageEnv, err)
	}
}

func TestCheckVersion(t *testing.T) {
	for _, tc := range []struct {
		tag, digest string
		ok          bool
	}{
		{tag: "1.6.39", ok: true},
		{tag: "1.6.18", ok: true},
		{tag: "1.6", ok: true},
		{tag: "v1.6.39", ok: true},
		{tag: "1.6.39-alpine", ok: true},
		{digest: "sha256:" + strings.Repeat("a", 64), ok: true},
		{tag: "1.5.22"},
		{tag: "1.7.0"},
		{tag: "2.0.0"},
		{tag: "latest"},
		{tag: "alpine"},
		{tag: "1.6.39alpine"},
	} {
		err := operand.CheckVersion(operand.Image{Repository: "memcached", Tag: tc.tag, Digest: tc.digest})
		if tc.ok != (err == nil) {
			t.Errorf("CheckVersion(tag %q, digest %q) = %v, want ok=%v", tc.tag, tc.digest, err, tc.ok)
		}
	}
}
