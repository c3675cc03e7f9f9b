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
	"os"
	"strings"
	"testing"
	"time"
)

func TestCommittedRatio(t *testing.T) {
	raw, err := os.ReadFile("results/results.md")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := committedRatio(string(raw), guardN); !ok || v <= 1 {
		t.Fatalf("the committed results.md: this / raw at N=%d read as %v, %v; want a ratio over 1", guardN, v, ok)
	}
	if _, ok := committedRatio("| 300 | 4.12 s | – | 13.5 s | – | – |\n", guardN); ok {
		t.Fatal("a row without the ratio read as one")
	}
}

func TestGuard(t *testing.T) {
	committed := "| N | raw-create limit | stock helm-operator | this operator | this / raw | stock / this |\n|---|---|---|---|---|---|\n" +
		"| 100 | 1.74 s | 19.5 s | 5.6 s | 3.2x (3.2–3.4) | 3.4x |\n| 300 | 4.12 s (4.05–4.63) | 49.9 s | 13.5 s | 3.1x (2.9–3.3) | 3.7x |\n"
	run := func(this ...time.Duration) []result {
		var rs []result
		for i, d := range this {
			rs = append(rs, result{variant: "raw", n: guardN, rep: i + 1, converge: 4 * time.Second},
				result{variant: "this", n: guardN, rep: i + 1, converge: d})
		}
		return rs
	}
	for _, c := range []struct {
		name   string
		rs     []result
		failed bool
		says   string
	}{
		{"as committed", run(12*time.Second, 13*time.Second, 14*time.Second), false, "passed: this / raw at N=300 is 3.25x"},
		{"24% over", run(15*time.Second, 15*time.Second, 16*time.Second), false, "passed"},
		{"the median 30% over", run(12*time.Second, 16120*time.Millisecond, 17*time.Second), true, "FAILED: this / raw at N=300 is 4.03x, more than 25% over the committed 3.1x"},
		{"not measured at N=300", nil, false, "not checked, this run did not measure"},
	} {
		says, failed := guard(committed, c.rs)
		if failed != c.failed || !strings.Contains(says, c.says) {
			t.Errorf("%s: guard said %q (failed %v), want %q (failed %v)", c.name, says, failed, c.says, c.failed)
		}
	}
	if says, failed := guard("no table", run(20*time.Second)); failed || !strings.Contains(says, "not checked, the committed results.md has no") {
		t.Errorf("without a committed figure: %q, %v", says, failed)
	}
}

func TestKeptNotes(t *testing.T) {
	notes := notesBegin + "\nWhat cost the time.\n" + notesEnd
	if got := keptNotes("# tables\n\n| 1 |\n\n" + notes + "\n"); got != notes+"\n" {
		t.Errorf("kept %q, want the notes with their markers", got)
	}
	for _, committed := range []string{"# tables only\n", notesBegin + "\nnever ended\n"} {
		if got := keptNotes(committed); got != "" {
			t.Errorf("from %q kept %q, want nothing", committed, got)
		}
	}
	raw, err := os.ReadFile("results/results.md")
	if err != nil {
		t.Fatal(err)
	}
	if keptNotes(string(raw)) == "" {
		t.Error("the committed results.md has no notes: say what the figures mean between the markers")
	}
}
