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

// Command failures prints, from Ginkgo JSON reports, each failed spec in a few lines: its name,
// where it failed, and the first lines of why. make test and make test-floor print it last when
// a suite fails, because CI keeps only the end of a long log and Ginkgo's own summary there names
// the failed specs without their reasons:
//
//	go run ./hack/failures [-lines 6] controllers.report.json ...
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2/types"
)

func main() {
	lines := flag.Int("lines", 6, "lines of each failure's message to print")
	stateLines = flag.Int("state-lines", 40, "lines of what a failed spec's namespaces held to print")
	logLines = flag.Int("log-lines", 12, "lines of the operator's log on a failed spec's namespaces to print")
	flag.Parse()
	for _, path := range flag.Args() {
		if err := printFailures(path, *lines); err != nil {
			fmt.Fprintln(os.Stderr, "failures:", err)
			os.Exit(1)
		}
	}
}

func printFailures(path string, lines int) error {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		fmt.Printf("%s: no report (the suite did not run to its end)\n", path)
		return nil
	}
	if err != nil {
		return err
	}
	var reports []types.Report
	if err := json.Unmarshal(data, &reports); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, r := range reports {
		for _, s := range r.SpecReports {
			if !s.State.Is(types.SpecStateFailureStates) {
				continue
			}
			f := s.Failure
			fmt.Printf("--- %s: %s\n", strings.ToUpper(s.State.String()), s.FullText())
			fmt.Printf("    at %s (%s, after %s)\n", f.Location, f.FailureNodeType, s.RunTime.Round(1e8))
			if by := lastStep(s); by != "" {
				fmt.Printf("    in step: %s\n", by)
			}
			msg := strings.Split(strings.TrimSpace(f.Message), "\n")
			if len(msg) > lines {
				msg = append(msg[:lines], fmt.Sprintf("(%d lines more)", len(msg)-lines))
			}
			for _, l := range msg {
				fmt.Printf("    %s\n", l)
			}
			// What the reconcile workers did when the spec failed (controllers/workers_test.go),
			// and what the spec's namespaces held (controllers/failure_state_test.go).
			for _, e := range s.ReportEntries {
				if e.Name == "busy workers" || e.Name == "namespace state" {
					state := strings.Split(strings.TrimSpace(e.Value.String()), "\n")
					if len(state) > *stateLines && e.Name == "namespace state" {
						state = append(state[:*stateLines], fmt.Sprintf("(%d lines more in %s)", len(state)-*stateLines, path))
					}
					for _, l := range state {
						fmt.Printf("    %s\n", l)
					}
				}
				if e.Name == "namespace state" {
					printLogOf(s.CapturedGinkgoWriterOutput, e.Value.String(), *logLines)
				}
			}
		}
	}
	return nil
}

// stateLines is how many lines of a failed spec's namespace state are printed.
var stateLines *int

// logLines is how many of the operator's log lines on a failed spec's namespaces are printed.
var logLines *int

// printLogOf prints the last n lines of a spec's captured log (the operator's, which writes to
// GinkgoWriter) that name one of the namespaces of state's first line ("namespaces: a b").
func printLogOf(log, state string, n int) {
	first, _, _ := strings.Cut(state, "\n")
	namespaces := strings.Fields(strings.TrimPrefix(first, "namespaces:"))
	var about []string
	for _, l := range strings.Split(log, "\n") {
		if slices.ContainsFunc(namespaces, func(ns string) bool { return strings.Contains(l, ns) }) {
			about = append(about, l)
		}
	}
	if len(about) == 0 {
		return
	}
	fmt.Printf("    the operator's last log lines on them (of %d):\n", len(about))
	for _, l := range about[max(0, len(about)-n):] {
		if r := []rune(l); len(r) > 300 {
			l = string(r[:300]) + "…"
		}
		fmt.Printf("      %s\n", l)
	}
}

// lastStep is the text of the spec's last By, the step it failed in.
func lastStep(s types.SpecReport) string {
	by := ""
	for _, e := range s.SpecEvents {
		if e.SpecEventType == types.SpecEventByStart {
			by = e.Message
		}
	}
	return by
}
