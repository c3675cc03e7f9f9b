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
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
)

// ChartNamesOf are the names the operator gives, outside the chart, to what the chart names for a
// release: the StatefulSet, its headless Service and the TLS Secrets (for the chart's tests).
func ChartNamesOf(release string) (servers, headless, serverTLS, clientTLS string) {
	return serversNameOf(release), headlessNameOf(release), serverTLSSecretName(release), clientTLSSecretOf(release)
}

func CASecretOf(release string) string { return caSecretName(release) }

// WriteStatusAs writes what st says of the part of a Memcached's status that owner ("operand",
// "stats", "autopilot" or "tls") writes, as that writer does.
func WriteStatusAs(ctx context.Context, c client.Client, owner string, mc *cachev1.Memcached, st *cachev1.MemcachedStatus) error {
	w, ok := map[string]statusOwner{"operand": operandWriter, "stats": statsWriter, "autopilot": autopilotWriter, "tls": tlsWriter}[owner]
	if !ok {
		return fmt.Errorf("no writer %q", owner)
	}
	return w.write(ctx, c, mc, st)
}
