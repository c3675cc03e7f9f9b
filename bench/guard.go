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
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The guard: make bench fails when this operator's share of the time to converge grows unseen.
// Its figure is the median of this / raw (paired per repetition) at guardN, the time until every
// Memcached reports Deployed; the committed bench/results/results.md, which a run overwrites,
// holds the figure of before. A ratio, not a time: the machine's speed on the day moves both.
const (
	guardN = 300
	// guardGrowth is how much the figure may grow over the committed one: a repetition's spread
	// at N=300 is about 10%.
	guardGrowth = 1.25
)

// guard compares this run's figure with the one of the committed report (its text); it says
// what it found, and whether the figure grew past guardGrowth.
func guard(committed string, results []result) (verdict string, failed bool) {
	now := summarize(ratio(results, "this", "raw", guardN, seconds))
	if now.n == 0 {
		return fmt.Sprintf("bench guard: not checked, this run did not measure this / raw at N=%d", guardN), false
	}
	was, ok := committedRatio(committed, guardN)
	if !ok {
		return fmt.Sprintf("bench guard: not checked, the committed results.md has no this / raw at N=%d", guardN), false
	}
	limit := was * guardGrowth
	if now.med > limit {
		return fmt.Sprintf("bench guard FAILED: this / raw at N=%d is %.2fx, more than %.0f%% over the committed %.1fx (limit %.2fx): the operator's share of the time to converge grew",
			guardN, now.med, (guardGrowth-1)*100, was, limit), true
	}
	return fmt.Sprintf("bench guard passed: this / raw at N=%d is %.2fx, the committed %.1fx (limit %.2fx)", guardN, now.med, was, limit), false
}

// committedRatio reads the median this / raw at N from the first table of a report: its row
// "| N | raw | stock | this | 3.1x (2.9–3.3) | ... |".
func committedRatio(report string, n int) (float64, bool) {
	row := regexp.MustCompile(`(?m)^\| ` + strconv.Itoa(n) + ` \|[^|\n]*\|[^|\n]*\|[^|\n]*\| ([0-9.]+)x[^|\n]*\|`)
	m := row.FindStringSubmatch(report)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil && v > 0
}

// The report's hand-written part: what the figures mean (what cost the time, what fixed it) is
// written between these markers at the end of results.md, and each run carries it over from the
// committed report, so that regenerating the tables keeps the reading of them.
const (
	notesBegin = "<!-- notes: written by hand, kept by make bench -->"
	notesEnd   = "<!-- end of notes -->"
)

// keptNotes is the committed report's hand-written part with its markers, or "" if it has none.
func keptNotes(committed string) string {
	i := strings.Index(committed, notesBegin)
	if i < 0 {
		return ""
	}
	j := strings.Index(committed[i:], notesEnd)
	if j < 0 {
		return ""
	}
	return committed[i:i+j+len(notesEnd)] + "\n"
}
