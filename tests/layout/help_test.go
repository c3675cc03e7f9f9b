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

package layout

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// `make help` fits one screen (at most 40 lines) and names only targets that exist with their
// description: a target renamed or left without its `##` text shows here.
func TestMakeHelpFitsAScreen(t *testing.T) {
	cmd := exec.Command("make", "--no-print-directory", "-s", "help")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make help: %v", err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > 40 {
		t.Errorf("make help prints %d lines, at most 40 fit a screen", len(lines))
	}
	target := regexp.MustCompile(`^  \x1b\[36m(\S+)\s*\x1b\[0m(.*)$`)
	shown := 0
	for _, l := range lines {
		if m := target.FindStringSubmatch(l); m != nil {
			shown++
			if strings.TrimSpace(m[2]) == "" {
				t.Errorf("make help shows %s without a description: no target %s with a ## text", m[1], m[1])
			}
		}
	}
	if shown < 10 {
		t.Errorf("make help shows %d targets:\n%s", shown, out)
	}
}
