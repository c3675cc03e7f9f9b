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
	"os"
	"path/filepath"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// docs/architecture.md names every controller the operator runs: the list comes from the
// controllers Setup registered in the suite's manager (controller-runtime's metrics carry each
// controller's name), not from a second list.
var _ = Describe("docs/architecture.md", func() {
	It("names every controller that Setup registers", func() {
		// A controller says its name in the metrics once its workers start.
		var registered []string
		Eventually(func(g Gomega) []string {
			families, err := crmetrics.Registry.Gather()
			g.Expect(err).NotTo(HaveOccurred())
			registered = nil
			for _, f := range families {
				if f.GetName() != "controller_runtime_max_concurrent_reconciles" {
					continue
				}
				for _, m := range f.GetMetric() {
					if name := label(m, "controller"); !slices.Contains(registered, name) {
						registered = append(registered, name)
					}
				}
			}
			return registered
		}, timeout, interval).Should(ContainElements("memcached-controller", "memcached-operand", "memcachedbackup"),
			"the controllers are read from the manager")
		page, err := os.ReadFile(filepath.Join("docs", "architecture.md"))
		Expect(err).NotTo(HaveOccurred())
		for _, name := range registered {
			Expect(string(page)).To(ContainSubstring("| `"+name+"`"), "the controllers' table has a row for %s", name)
		}
	})
})
