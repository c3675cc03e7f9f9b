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

package values_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/example/memcached-operator/controllers/values"
	"github.com/example/memcached-operator/internal/operand"
)

func TestTranslate(t *testing.T) {
	mirror := &operand.Image{Repository: "mirror.local/memcached", Tag: "1.6.38"}
	pinned := &operand.Image{Repository: "mirror.local/memcached", Tag: "1.6.38", Digest: "sha256:" + sixtyFourHex}
	exporter := &operand.Image{Repository: "mirror.local/memcached-exporter", Tag: "v0.15.3"}
	digestOnly := &operand.Image{Repository: "mirror.local/memcached", Digest: "sha256:" + sixtyFourHex}
	tests := []struct {
		name     string
		spec     map[string]any
		image    *operand.Image
		exporter *operand.Image
		want     map[string]any
	}{
		{name: "no spec, no operator settings: the chart's defaults apply",
			spec: nil, want: map[string]any{}},
		{name: "the CR's values pass through untouched",
			spec: map[string]any{"replicaCount": int64(3), "memcached": map[string]any{"threads": int64(2)}},
			want: map[string]any{"replicaCount": int64(3), "memcached": map[string]any{"threads": int64(2)}}},
		{name: "the operator's image fills an unset image",
			spec: map[string]any{}, image: mirror,
			want: map[string]any{"image": map[string]any{"repository": "mirror.local/memcached", "tag": "1.6.38"}}},
		{name: "a tag in the CR wins over the operator's tag, on the operator's repository",
			spec: map[string]any{"image": map[string]any{"tag": "1.6.39"}}, image: mirror,
			want: map[string]any{"image": map[string]any{"repository": "mirror.local/memcached", "tag": "1.6.39"}}},
		{name: "a digest in the CR wins and no tag is added",
			spec: map[string]any{"image": map[string]any{"digest": "sha256:abc"}}, image: mirror,
			want: map[string]any{"image": map[string]any{"repository": "mirror.local/memcached", "digest": "sha256:abc"}}},
		{name: "a full image in the CR is kept",
			spec:  map[string]any{"image": map[string]any{"repository": "my/memcached", "tag": "1.6.30"}},
			image: mirror,
			want:  map[string]any{"image": map[string]any{"repository": "my/memcached", "tag": "1.6.30"}}},
		{name: "the operator's digest comes with its tag",
			spec: map[string]any{}, image: pinned,
			want: map[string]any{"image": map[string]any{"repository": "mirror.local/memcached", "tag": "1.6.38", "digest": pinned.Digest}}},
		{name: "the operator's exporter image fills metrics.image, next to the CR's metrics settings",
			spec: map[string]any{"metrics": map[string]any{"enabled": true}}, exporter: exporter,
			want: map[string]any{"metrics": map[string]any{"enabled": true, "image": map[string]any{"repository": "mirror.local/memcached-exporter", "tag": "v0.15.3"}}}},
		{name: "an exporter digest in the CR wins",
			spec: map[string]any{"metrics": map[string]any{"image": map[string]any{"digest": "sha256:abc"}}}, exporter: exporter,
			want: map[string]any{"metrics": map[string]any{"image": map[string]any{"repository": "mirror.local/memcached-exporter", "digest": "sha256:abc"}}}},
		{name: "an operator's image pinned by digest alone adds no empty tag",
			spec: map[string]any{"metrics": map[string]any{"enabled": true}}, image: digestOnly, exporter: &operand.Image{Repository: "mirror.local/memcached-exporter", Digest: digestOnly.Digest},
			want: map[string]any{"image": map[string]any{"repository": "mirror.local/memcached", "digest": digestOnly.Digest},
				"metrics": map[string]any{"enabled": true, "image": map[string]any{"repository": "mirror.local/memcached-exporter", "digest": digestOnly.Digest}}}},
		{name: "both images, independently",
			spec: map[string]any{}, image: mirror, exporter: exporter,
			want: map[string]any{"image": map[string]any{"repository": "mirror.local/memcached", "tag": "1.6.38"},
				"metrics": map[string]any{"image": map[string]any{"repository": "mirror.local/memcached-exporter", "tag": "v0.15.3"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]any{}}
			obj.SetKind("Memcached")
			obj.SetName("memcached-sample")
			if tt.spec != nil {
				obj.Object["spec"] = tt.spec
			}
			before := obj.DeepCopy()
			got, err := values.Translate(obj, values.Operator{Image: tt.image, ExporterImage: tt.exporter})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(map[string]any(got), tt.want) {
				t.Errorf("values = %v, want %v", got, tt.want)
			}
			if !reflect.DeepEqual(obj, before) {
				t.Errorf("the CR was modified: %v", obj.Object)
			}
		})
	}
}

func TestTranslateRefusesUnsupportedVersions(t *testing.T) {
	for _, tag := range []string{"1.5.22", "2.0.0", "latest"} {
		obj := &unstructured.Unstructured{Object: map[string]any{"kind": "Memcached", "metadata": map[string]any{"name": "m"},
			"spec": map[string]any{"image": map[string]any{"tag": tag}}}}
		_, err := values.Translate(obj, values.Operator{})
		var unsupported *operand.ErrUnsupportedVersion
		if !errors.As(err, &unsupported) || !strings.Contains(err.Error(), tag) {
			t.Errorf("tag %s: got %v, want an ErrUnsupportedVersion naming the tag", tag, err)
		}
	}
}

// A Memcached made before admission checked names is refused with the reason, not installed.
func TestTranslateRefusesNamesHelmCannotUse(t *testing.T) {
	for _, name := range []string{strings.Repeat("m", 54), "memcached.sample", "1memcached"} {
		obj := &unstructured.Unstructured{Object: map[string]any{"kind": "Memcached", "metadata": map[string]any{"name": name}}}
		if _, err := values.Translate(obj, values.Operator{}); err == nil || !strings.Contains(err.Error(), "cannot be reconciled") {
			t.Errorf("name %q: got %v, want a refusal that says why", name, err)
		}
	}
}

const sixtyFourHex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// What keepCacheAcross Restarts cannot run is refused with the reason, not installed.
func TestTranslateRefusesWhatWarmRestartsCannotRun(t *testing.T) {
	for spec, want := range map[string]string{
		`{"keepCacheAcross": "Restarts", "memcached": {"maxMemoryMB": 32}}`:                                    "needs memcached.maxMemoryMB of at least 39, not 32",
		`{"keepCacheAcross": "Restarts", "memcached": {"memoryLimitMB": 16}}`:                                  "needs memcached.maxMemoryMB of at least 39, not 16",
		`{"keepCacheAcross": "Restarts", "autoscaling": {"enabled": true, "maxMemoryMB": 128}}`:                "autoscaling.maxMemoryMB 128 cannot be above memcached.maxMemoryMB 64",
		`{"keepCacheAcross": "Restarts", "memcached": {"maxMemoryMB": 39}, "autoscaling": {"maxReplicas": 4}}`: "",
		`{"keepCacheAcross": "MemoryChanges", "memcached": {"maxMemoryMB": 16}}`:                               "",
		`{"memcached": {"maxMemoryMB": 16}, "autoscaling": {"enabled": true, "maxMemoryMB": 128}}`:             "",
		`{"persistence": {"enabled": true}}`:                                                                   "persistence needs keepCacheAcross Restarts",
		`{"keepCacheAcross": "MemoryChanges", "persistence": {"enabled": true}}`:                               "persistence needs keepCacheAcross Restarts",
		`{"persistence": {"enabled": false, "size": "1Gi"}}`:                                                   "",
		`{"keepCacheAcross": "Restarts", "persistence": {"enabled": true}}`:                                    "",
	} {
		obj := &unstructured.Unstructured{Object: map[string]any{"kind": "Memcached", "metadata": map[string]any{"name": "m"}}}
		var raw map[string]any
		if err := json.Unmarshal([]byte(spec), &raw); err != nil {
			t.Fatal(err)
		}
		obj.Object["spec"] = raw
		_, err := values.Translate(obj, values.Operator{})
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: refused (%v), want it rendered", spec, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: got %v, want a refusal with %q", spec, err, want)
		}
	}
}
