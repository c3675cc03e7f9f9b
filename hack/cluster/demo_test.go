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
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The demo labels each phase with what it took in the committed measured run: every phase it
// runs is in that run, so a renamed or added phase needs a new measurement, and the Makefile
// prints the first phase's title.
func TestDemoTimesLogMeasuresEveryPhase(t *testing.T) {
	times, err := runTimes(readRepoFile(t, demoTimesLog), firstRunHeading)
	if err != nil {
		t.Fatal(err)
	}
	var sum time.Duration
	for _, phase := range localPhases {
		d, ok := times[phase]
		if !ok {
			t.Errorf("%s's first run has no row for the phase %q: measure the demo again (make demo on a fresh machine)", demoTimesLog, phase)
		}
		sum += d
	}
	// Each phase is rounded to a second.
	if diff := (times["in all"] - sum).Abs(); diff > time.Duration(len(localPhases))*time.Second {
		t.Errorf("%s: the phases of the first run add up to %s, its \"in all\" says %s", demoTimesLog, sum, times["in all"])
	}
	if mk := readRepoFile(t, "Makefile"); !strings.Contains(mk, "DEMO_FIRST_PHASE = [1] "+phaseTool+"\n") {
		t.Errorf("the Makefile's DEMO_FIRST_PHASE does not print the phase %q", phaseTool)
	}
}

// The README's figures for make demo are the measured run's, rounded.
func TestReadmeDemoFiguresAreMeasured(t *testing.T) {
	log := readRepoFile(t, demoTimesLog)
	first, err := runTimes(log, firstRunHeading)
	if err != nil {
		t.Fatal(err)
	}
	second, err := runTimes(log, secondRunHeading)
	if err != nil {
		t.Fatal(err)
	}
	readme := readRepoFile(t, "README.md")
	for _, want := range []struct {
		pattern string
		took    time.Duration
		unit    time.Duration
	}{
		{`the first run took (\d+) minutes`, first["in all"], time.Minute},
		{`a second, (\d+) seconds`, second["in all"], time.Second},
	} {
		m := regexp.MustCompile(want.pattern).FindStringSubmatch(strings.Join(strings.Fields(readme), " "))
		if m == nil {
			t.Errorf("the README does not say %q", want.pattern)
			continue
		}
		said, _ := strconv.Atoi(m[1])
		if measured := int(math.Round(float64(want.took) / float64(want.unit))); said != measured {
			t.Errorf("the README says %q, the run of %s measured %s", m[0], demoTimesLog, want.took)
		}
	}
}

// The log's rows are read as they are written; a malformed one is an error, not a silent zero.
func TestRunTimes(t *testing.T) {
	start := time.Now()
	p := &phases{start: start, end: start.Add(time.Minute), took: []phaseTime{{phaseKubectl, 90 * time.Second}}}
	log := "# x\n\n## Second run\n\n| phase | took |\n|---|---|\n| kubectl | 5s |\n| in all | 5s |\n\n## First run: cold\n\n" + p.table() + "\n## after\n| in all | 1s |\n"
	times, err := runTimes(log, firstRunHeading)
	if err != nil {
		t.Fatal(err)
	}
	if times[phaseKubectl] != 90*time.Second || times["in all"] != time.Minute {
		t.Errorf("read %v", times)
	}
	if _, err := runTimes("## First run\n| kubectl | soon |\n| in all | 1s |\n", firstRunHeading); err == nil {
		t.Error("a row without a duration was read")
	}
	if _, err := runTimes("## Second run\n| in all | 1s |\n", firstRunHeading); err == nil {
		t.Error("a log without a first run was read")
	}
}
