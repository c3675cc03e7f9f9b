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

package actionclient

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// releaseOperations counts the installs, upgrades and uninstalls of releases that were tried, by
// outcome: from the render of the chart on (a chart that refuses the values fails the operation),
// not the dry runs that render a release to compare it, nor an upgrade held back before its
// render (a back-off, a refused downgrade). memcached_operator_release_operations_total.
var releaseOperations = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "memcached_operator",
	Name:      "release_operations_total",
	Help:      "Helm release installs, upgrades and uninstalls tried, by operation and outcome (succeeded, failed).",
}, []string{"operation", "outcome"})

func init() {
	crmetrics.Registry.MustRegister(releaseOperations)
	for _, op := range []string{"install", "upgrade", "uninstall"} {
		for _, outcome := range []string{"succeeded", "failed"} {
			releaseOperations.WithLabelValues(op, outcome) // every series from 0, so rate() sees the first one
		}
	}
}

// countOperation counts an operation's outcome.
func countOperation(op string, err error) {
	outcome := "succeeded"
	if err != nil {
		outcome = "failed"
	}
	releaseOperations.WithLabelValues(op, outcome).Inc()
}
