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
	"reflect"
	"strings"
	"testing"
)

func TestChannels(t *testing.T) {
	releases := []Release{
		{Version: "0.1.0", Commit: "a", Channels: []string{"candidate", "stable"}},
		{Version: "0.2.0", Commit: "b", Channels: []string{"candidate"}},
		{Version: "0.3.0", Channels: []string{"candidate", "stable"}},
	}
	got := Channels("op", releases)
	want := []map[string]any{
		{"schema": "olm.channel", "package": "op", "name": "candidate", "entries": []map[string]any{
			{"name": "op.v0.1.0"},
			{"name": "op.v0.2.0", "replaces": "op.v0.1.0", "skipRange": ">=0.1.0 <0.2.0"},
			{"name": "op.v0.3.0", "replaces": "op.v0.2.0", "skipRange": ">=0.1.0 <0.3.0"},
		}},
		{"schema": "olm.channel", "package": "op", "name": "stable", "entries": []map[string]any{
			{"name": "op.v0.1.0"},
			{"name": "op.v0.3.0", "replaces": "op.v0.1.0", "skipRange": ">=0.1.0 <0.3.0"},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Channels:\n got %v\nwant %v", got, want)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		releases []Release
		err      string
	}{
		{"newest may lack its commit", []Release{{Version: "0.1.0", Commit: "a", Channels: []string{"stable"}}, {Version: "0.2.0", Channels: []string{"stable"}}}, ""},
		{"empty", nil, "no release"},
		{"not semver", []Release{{Version: "v1", Channels: []string{"stable"}}}, "version \"v1\""},
		{"decreasing", []Release{{Version: "0.2.0", Commit: "a", Channels: []string{"stable"}}, {Version: "0.1.0", Channels: []string{"stable"}}}, "must increase"},
		{"older without commit", []Release{{Version: "0.1.0", Channels: []string{"stable"}}, {Version: "0.2.0", Channels: []string{"stable"}}}, "0.1.0 has no commit"},
		{"no channel", []Release{{Version: "0.1.0"}}, "in no channel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validate(tc.releases)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("validate: got %v, want an error containing %q", err, tc.err)
			}
		})
	}
}
