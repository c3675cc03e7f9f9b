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

package controllers

import (
	"encoding/json"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/memcached-operator/internal/labels"
)

// The ResizeHold annotation on a cache's StatefulSet: what the operator decided for a memory
// change and how it went, so that an operator restart resumes (see memcached_resize.go).

// Outcomes of a memory change in the ResizeHold annotation.
const (
	outcomeResizing  = ""
	outcomeInPlace   = "InPlace"
	outcomeRolledOut = "RolledOut"
)

// resizeRecord is the ResizeHold annotation: what the operator decided for the memory change that
// an upgrade of the release makes, and how it went.
type resizeRecord struct {
	// Release is the release revision the servers ran when the change came: the upgrade makes
	// a later one.
	Release int32 `json:"release"`
	// Revision is the StatefulSet's template revision the servers ran then.
	Revision string `json:"revision,omitempty"`
	// FromMB and ToMB are memcached's item memory before and after, in MiB; FromLimit and
	// ToLimit the container's memory limit.
	FromMB    int32  `json:"fromMB"`
	ToMB      int32  `json:"toMB"`
	FromLimit string `json:"fromLimit,omitempty"`
	ToLimit   string `json:"toLimit,omitempty"`
	// Since is when the change came.
	Since metav1.Time `json:"since"`
	// Outcome is "" while the servers are resized in place, InPlace once they are, RolledOut
	// when the StatefulSet rolls them instead, for the reason in Why.
	Outcome string       `json:"outcome,omitempty"`
	Why     string       `json:"why,omitempty"`
	At      *metav1.Time `json:"at,omitempty"`
	// Blocked says why the resize waits while the servers stay held: the API server refused a
	// resize for a policy of the namespace (a ResourceQuota, a LimitRange).
	Blocked string `json:"blocked,omitempty"`

	// Since 1.3.0 the record is of every change of the servers' template (servers_change.go),
	// not only of memory. Way is how it is made (WayInPlace, WayWarmRestart, WayStartedEmpty;
	// "" in a record of 1.2.0: memory in place), Change what it changes, in words.
	Way    string `json:"way,omitempty"`
	Change string `json:"change,omitempty"`
	// Memory says the change includes memory (memcached's -m, its container's resources).
	Memory bool `json:"memory,omitempty"`
	// Restart is the server whose memcached restarts now (WayWarmRestart, one at a time).
	Restart *serverRestart `json:"restart,omitempty"`
	// Progress is when the last server was done: the timeout counts from it.
	Progress *metav1.Time `json:"progress,omitempty"`
	// Fits says every held server holds no more memory than a shrink's new limit (asked once).
	Fits bool `json:"fits,omitempty"`
	// Warm and Empty are the servers restarted so far: with their items, and without (server →
	// why).
	Warm  []string          `json:"warm,omitempty"`
	Empty map[string]string `json:"empty,omitempty"`
}

// serverRestart is a server whose memcached the operator restarts in its pod, and what it held.
type serverRestart struct {
	Server string `json:"server"`
	// Items memcached held right before, and the restarts its container had.
	Items    uint64      `json:"items"`
	Restarts int32       `json:"restarts"`
	At       metav1.Time `json:"at"`
}

// last is when the record last moved: its outcome, else the last server done, else the hold.
func (r resizeRecord) last() *metav1.Time {
	switch {
	case r.At != nil:
		return r.At
	case r.Progress != nil:
		return r.Progress
	}
	return &r.Since
}

// memoryChange says whether the record's change is to memory (the Resizing condition's).
func (r resizeRecord) memoryChange() bool {
	return r.Way == "" || r.Memory
}

// what says in words what the record's change is.
func (r resizeRecord) what() string {
	if r.Change != "" {
		return r.Change
	}
	return r.change()
}

// change says what the record's memory change is, in words.
func (r resizeRecord) change() string {
	var parts []string
	if r.FromMB != r.ToMB {
		parts = append(parts, fmt.Sprintf("item memory %d → %d MiB", r.FromMB, r.ToMB))
	}
	if r.FromLimit != "" && r.ToLimit != "" && r.FromLimit != r.ToLimit {
		parts = append(parts, fmt.Sprintf("container memory %s → %s", r.FromLimit, r.ToLimit))
	}
	if len(parts) == 0 {
		parts = append(parts, "container resources") // cpu, or a memory request: resized in place alike
	}
	return strings.Join(parts, ", ")
}

// resizeRecordOf reads the ResizeHold annotation of a StatefulSet; nil when it has none (or one
// that does not parse: a hold the operator did not make is none of its business).
func resizeRecordOf(s *appsv1.StatefulSet) *resizeRecord {
	v, ok := s.Annotations[labels.ResizeHold]
	if !ok {
		return nil
	}
	r := &resizeRecord{}
	if err := json.Unmarshal([]byte(v), r); err != nil {
		return nil
	}
	return r
}

func (r resizeRecord) annotation() string {
	b, _ := json.Marshal(r) // plain fields
	return string(b)
}
