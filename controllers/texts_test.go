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
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// Every text the operator writes for people (condition messages, the rollout's empty starts,
// Events) is read while the suite runs, and checked when it ends: a count agrees with its noun, a
// rate is rounded, no Go formatting slips through.
var operatorTexts = &textLog{seen: map[string]string{}}

type textLog struct {
	mu   sync.Mutex
	seen map[string]string // text → where it was first seen
}

func (l *textLog) add(where, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.seen[text]; !ok {
		l.seen[text] = where
	}
}

// flaws lists each text that reads wrong, with where it was seen and why.
func (l *textLog) flaws() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for text, where := range l.seen {
		for _, why := range textFlaws(text) {
			out = append(out, fmt.Sprintf("%s: %q: %s", where, text, why))
		}
	}
	slices.Sort(out)
	return out
}

// checkTexts fails the suite if a text it saw reads wrong; it runs after every spec.
func checkTexts() {
	GinkgoHelper()
	GinkgoWriter.Printf("read %d distinct texts the operator wrote for people\n", operatorTexts.size())
	Expect(operatorTexts.flaws()).To(BeEmpty(), "texts the operator wrote for people")
}

// size is how many distinct texts were seen.
func (l *textLog) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

// watchTexts reads, as an administrator, every Memcached, MemcachedBackup and Event of the API
// server at cfg until ctx ends, into operatorTexts.
func watchTexts(ctx context.Context, cfg *rest.Config) {
	GinkgoHelper()
	c, err := cache.New(cfg, cache.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	watch := func(obj client.Object, texts func(o any, add func(where, text string))) {
		inf, err := c.GetInformer(ctx, obj)
		Expect(err).NotTo(HaveOccurred())
		read := func(o any) { texts(o, operatorTexts.add) }
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: read, UpdateFunc: func(_, o any) { read(o) }})
		Expect(err).NotTo(HaveOccurred())
	}
	condition := func(kind string, o metav1.Object, typ string, status metav1.ConditionStatus, reason, message string, add func(where, text string)) {
		add(fmt.Sprintf("%s %s/%s condition %s=%s/%s", kind, o.GetNamespace(), o.GetName(), typ, status, reason), message)
	}
	watch(&cachev1.Memcached{}, func(o any, add func(where, text string)) {
		mc := o.(*cachev1.Memcached)
		for _, c := range mc.Status.Conditions {
			condition("Memcached", mc, c.Type, c.Status, c.Reason, c.Message, add)
		}
		if mc.Status.Rollout != nil {
			for _, s := range mc.Status.Rollout.Servers {
				if s.StartedEmpty != nil {
					add(fmt.Sprintf("Memcached %s/%s status.rollout server %s", mc.Namespace, mc.Name, s.Name), s.StartedEmpty.Message)
				}
			}
		}
	})
	watch(&cachev1.MemcachedBackup{}, func(o any, add func(where, text string)) {
		b := o.(*cachev1.MemcachedBackup)
		for _, c := range b.Status.Conditions {
			condition("MemcachedBackup", b, c.Type, c.Status, c.Reason, c.Message, add)
		}
	})
	watch(&eventsv1.Event{}, func(o any, add func(where, text string)) {
		e := o.(*eventsv1.Event)
		if strings.HasPrefix(e.ReportingController, "memcached") {
			add(fmt.Sprintf("Event %s %s of %s %s/%s", e.Reason, e.Action, e.Regarding.Kind, e.Regarding.Namespace, e.Regarding.Name), e.Note)
		}
	})
	go func() {
		defer GinkgoRecover()
		Expect(c.Start(ctx)).To(Succeed())
	}()
	Expect(c.WaitForCacheSync(ctx)).To(BeTrue())
}

var (
	// countedNouns are the nouns the operator counts: "1" goes with their singular.
	countedNouns   = `(servers|pods|items|times|replicas|connections|keys|seconds|minutes|bytes|hooks|revisions|certificates|secrets|evictions|nodes|containers|restarts|releases|records|namespaces)`
	oneWithPlural  = regexp.MustCompile(`(^|[^\d.])1 ` + countedNouns + `\b`)
	oneOfAre       = regexp.MustCompile(`(^|[^\d.])1 of \d+ [a-z -]+? are\b`)
	manyOfIs       = regexp.MustCompile(`\b(0|[2-9]|\d{2,}) of \d+ [a-z -]+? is\b`)
	milliRate      = regexp.MustCompile(`\b\d+m( [a-z]+)?/s\b`)
	goFormatting   = regexp.MustCompile(`%!|<nil>|&\{|map\[|\bnil pointer\b`)
	doubleSpace    = regexp.MustCompile(`\S  +\S`)
	repeatableWord = regexp.MustCompile(`[a-z]+`)
)

// textFlaws says why text reads wrong to a person, if it does.
func textFlaws(text string) []string {
	var why []string
	if oneWithPlural.MatchString(text) {
		why = append(why, "a count of 1 with a plural noun")
	}
	if oneOfAre.MatchString(text) || manyOfIs.MatchString(text) {
		why = append(why, "the verb does not agree with the count")
	}
	if milliRate.MatchString(text) {
		why = append(why, "a rate printed as a raw quantity, in thousandths")
	}
	if goFormatting.MatchString(text) {
		why = append(why, "Go's formatting of a value, not a sentence")
	}
	if text != strings.TrimSpace(text) || doubleSpace.MatchString(text) {
		why = append(why, "stray spaces")
	}
	words := strings.Fields(text)
	for i := 1; i < len(words); i++ {
		if words[i] == words[i-1] && repeatableWord.FindString(words[i]) == words[i] {
			why = append(why, fmt.Sprintf("%q twice", words[i]))
		}
	}
	return why
}

var _ = Describe("The texts the operator writes for people", func() {
	DescribeTable("are checked for what reads wrong",
		func(text string, flawed bool) {
			if flawed {
				Expect(textFlaws(text)).NotTo(BeEmpty())
			} else {
				Expect(textFlaws(text)).To(BeEmpty())
			}
		},
		Entry(nil, "pod a, container memcached: restarted 1 times, last ended Error (exit code 1)", true),
		Entry(nil, "pod a, container memcached: restarted 1 time, last ended Error (exit code 1)", false),
		Entry(nil, "1 of 1 servers are available", true),
		Entry(nil, "1 of 1 server is available", false),
		Entry(nil, "2 of 3 servers is available", true),
		Entry(nil, "0 of 3 servers are available", false),
		Entry(nil, "1 of 3 servers is available", false),
		Entry(nil, "12666666m items/s evicted on 1 of 1 pod", true),
		Entry(nil, "12667 items/s evicted on 1 of 1 pod", false),
		Entry(nil, "item memory 64 → 128 MiB: 11 servers resized", false),
		Entry(nil, "server %!s(MISSING) restarted", true),
		Entry(nil, "the servers  are available", true),
		Entry(nil, "the the servers", true),
		Entry(nil, "waited 3m0s for the servers", false),
	)
})
