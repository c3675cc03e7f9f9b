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

// Where an install's time goes, from the audit log: each Memcached's create, then the operator's
// requests for it in order, with when the API server received each and how long it took. Between
// a response and the next request of an install the time is the operator's (its queue, Helm's
// render, its cache, its CPU share).

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// installStep is the i-th request of an install: medians over the installs whose requests were
// the same sequence.
type installStep struct {
	request string        // verb and resource ("create memcacheds" is the CR's create)
	at      time.Duration // received, since the CR's create
	server  time.Duration // the API server's time on it
	before  time.Duration // since the install's previous response (the operator's time)
}

// installTrace is the most common sequence of an install's requests, and how many had it.
type installTrace struct {
	steps         []installStep
	installs, all int
}

type auditRequest struct {
	request            string
	received, complete time.Time
}

// installTrace reads the audit log between two marks.
func (cp *controlPlane) installTrace(from, to auditMark) (installTrace, error) {
	f, err := os.Open(cp.audit)
	if err != nil {
		return installTrace{}, err
	}
	defer f.Close()
	if _, err := f.Seek(int64(from), 0); err != nil {
		return installTrace{}, err
	}
	byInstall := map[string][]auditRequest{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	read := int64(from)
	for sc.Scan() && read < int64(to) {
		line := sc.Bytes()
		read += int64(len(line)) + 1
		var ev struct {
			Stage string `json:"stage"`
			Verb  string `json:"verb"`
			User  struct {
				Username string `json:"username"`
			} `json:"user"`
			ObjectRef struct {
				Resource, Subresource, Name string
			} `json:"objectRef"`
			Received time.Time `json:"requestReceivedTimestamp"`
			Complete time.Time `json:"stageTimestamp"`
		}
		if json.Unmarshal(line, &ev) != nil || ev.Stage != "ResponseComplete" {
			continue
		}
		crCreate := ev.Verb == "create" && ev.ObjectRef.Resource == "memcacheds"
		if ev.User.Username != operatorUser && !crCreate {
			continue
		}
		install := installOf(ev.ObjectRef.Resource, ev.ObjectRef.Name)
		if install == "" {
			continue
		}
		request := strings.TrimSuffix(ev.Verb+" "+ev.ObjectRef.Resource+"/"+ev.ObjectRef.Subresource, "/")
		byInstall[install] = append(byInstall[install], auditRequest{request, ev.Received, ev.Complete})
	}
	if err := sc.Err(); err != nil {
		return installTrace{}, err
	}
	// The installs whose requests were the most common sequence, from the CR's create.
	sequences := map[string][][]auditRequest{}
	for _, reqs := range byInstall {
		slices.SortStableFunc(reqs, func(a, b auditRequest) int { return a.received.Compare(b.received) })
		if reqs[0].request != "create memcacheds" {
			continue
		}
		var names []string
		for _, r := range reqs {
			names = append(names, r.request)
		}
		key := strings.Join(names, ",")
		sequences[key] = append(sequences[key], reqs)
	}
	keys := slices.SortedFunc(maps.Keys(sequences), func(a, b string) int { return cmp.Compare(len(sequences[b]), len(sequences[a])) })
	if len(keys) == 0 {
		return installTrace{all: len(byInstall)}, nil
	}
	installs := sequences[keys[0]]
	t := installTrace{installs: len(installs), all: len(byInstall)}
	for i, r := range installs[0] {
		var at, server, before []time.Duration
		for _, reqs := range installs {
			at = append(at, reqs[i].received.Sub(reqs[0].received))
			server = append(server, reqs[i].complete.Sub(reqs[i].received))
			if i > 0 {
				before = append(before, reqs[i].received.Sub(latestComplete(reqs[:i])))
			}
		}
		t.steps = append(t.steps, installStep{request: r.request, at: medianOf(at), server: medianOf(server), before: medianOf(before)})
	}
	return t, nil
}

// latestComplete is when the last of some requests was answered.
func latestComplete(reqs []auditRequest) time.Time {
	var t time.Time
	for _, r := range reqs {
		if r.complete.After(t) {
			t = r.complete
		}
	}
	return t
}

// installOf is the Memcached an object belongs to: the CR itself, its release record
// (sh.helm.release.v1.<name>.v<n>) or the chart's objects (<name>-memcached...).
func installOf(resource, name string) string {
	switch {
	case resource == "memcacheds":
		return name
	case strings.HasPrefix(name, recordPrefix):
		return releaseName(name)
	}
	if before, _, found := strings.Cut(name, "-memcached"); found {
		return before
	}
	return ""
}

const recordPrefix = "sh.helm.release.v1."

func releaseName(record string) string {
	name := strings.TrimPrefix(record, recordPrefix)
	if i := strings.LastIndex(name, ".v"); i >= 0 {
		return name[:i]
	}
	return name
}

func medianOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// traceReport is the trace as a table.
func traceReport(t installTrace) string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d installs sent these requests in this order (medians):\n\n", t.installs, t.all)
	fmt.Fprintf(&b, "| # | request | received, since the CR's create | the operator's time before it | the API server's time |\n|---|---|---|---|---|\n")
	for i, s := range t.steps {
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", i, s.request, ms(s.at), ms(s.before), ms(s.server))
	}
	return b.String()
}
