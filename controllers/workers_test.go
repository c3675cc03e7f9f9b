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
	"fmt"
	"runtime"
	"strings"

	. "github.com/onsi/ginkgo/v2"
)

// A spec that waited in vain for a controller to act (its condition never came) leaves, in its
// report, what each of the process's reconcile workers was doing at that moment: a controller
// whose workers are all held somewhere, and where, is the question such a failure asks
// (hack/failures prints it).
var _ = JustAfterEach(func() {
	if CurrentSpecReport().Failed() {
		AddReportEntry(busyWorkersEntry, busyWorkers())
	}
})

// busyWorkersEntry names the report entry (hack/failures prints it).
const busyWorkersEntry = "busy workers"

// busyWorkers is, for each goroutine inside a controller's Reconcile, its wait (what and for how
// long) and its innermost frames of this module's code.
func busyWorkers() string {
	buf := make([]byte, 16<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	idle := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		switch {
		case !strings.Contains(g, "pkg/internal/controller.(*Controller[...]).processNextWorkItem"):
			continue
		case !strings.Contains(g, "reconcileHandler"):
			idle++ // waiting for the queue's next item
			continue
		}
		var frames []string
		for i := 1; i+1 < len(lines) && len(frames) < 4; i += 2 {
			if f := lines[i]; strings.HasPrefix(f, "github.com/example/memcached-operator/") {
				frames = append(frames, strings.TrimPrefix(f[:strings.LastIndex(f, "(")], "github.com/example/memcached-operator/")+" "+strings.TrimSpace(lines[i+1]))
			}
		}
		out = append(out, fmt.Sprintf("%s\n    %s", lines[0], strings.Join(frames, "\n    ")))
	}
	return fmt.Sprintf("%d reconcile workers idle, %d in a reconcile:\n%s", idle, len(out), strings.Join(out, "\n"))
}
