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

package controllers_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/example/memcached-operator/controllers"
	"github.com/example/memcached-operator/internal/operand"
)

func TestTranslateValues(t *testing.T) {
	mirror := &operand.Image{Repository: "mirror.local/memcached", Tag: "1.6.38"}
	pinned := &operand.Image{Repository: "mirror.local/memcached", Tag: "1.6.38", Digest: "sha256:" + sixtyFourHex}
	tests := []struct {
		name  string
		spec  map[string]any
		image *operand.Image
		proxy map[string]string
		want  map[string]any
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
		{name: "proxy settings are added",
			spec: map[string]any{}, proxy: map[string]string{"httpProxy": "http://p:3128"},
			want: map[string]any{"proxy": map[string]any{"httpProxy": "http://p:3128"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]any{}}
			if tt.spec != nil {
				obj.Object["spec"] = tt.spec
			}
			before := obj.DeepCopy()
			got, err := controllers.TranslateValues(obj, tt.image, tt.proxy)
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

func TestTranslateValuesRefusesUnsupportedVersions(t *testing.T) {
	for _, tag := range []string{"1.5.22", "2.0.0", "latest"} {
		obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"image": map[string]any{"tag": tag}}}}
		_, err := controllers.TranslateValues(obj, nil, nil)
		var unsupported *operand.ErrUnsupportedVersion
		if !errors.As(err, &unsupported) || !strings.Contains(err.Error(), tag) {
			t.Errorf("tag %s: got %v, want an ErrUnsupportedVersion naming the tag", tag, err)
		}
	}
}

func TestProxyValues(t *testing.T) {
	got := controllers.ProxyValues([]corev1.EnvVar{
		{Name: "HTTP_PROXY", Value: "http://p:3128"}, {Name: "http_proxy", Value: "http://p:3128"},
		{Name: "NO_PROXY", Value: ".svc"}, {Name: "HTTPS_PROXY", Value: ""},
	})
	want := map[string]string{"httpProxy": "http://p:3128", "noProxy": ".svc"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ProxyValues = %v, want %v", got, want)
	}
}

const sixtyFourHex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
