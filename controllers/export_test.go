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

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/memcachedstatus"
	"github.com/example/memcached-operator/controllers/internal/serverset"
	"github.com/example/memcached-operator/controllers/servers"
	"github.com/example/memcached-operator/controllers/servertls"
	"github.com/example/memcached-operator/internal/helm"
)

// ChartNamesOf are the names the operator gives, outside the chart, to what the chart names for a
// release: the StatefulSet, its headless Service and the TLS Secrets (for the chart's tests).
func ChartNamesOf(release string) (servers, headless, serverTLS, clientTLS string) {
	return serverset.NameOf(release), serverset.HeadlessNameOf(release), serverset.ServerTLSSecretName(release), serverset.ClientTLSSecretOf(release)
}

// DefaultProgressDelay is how long the servers reconciler holds a report that says only how far a
// rollout has come.
const DefaultProgressDelay = servers.DefaultProgressDelay

func CASecretOf(release string) string { return serverset.CASecretName(release) }

// WriteStatusAs writes what st says of the part of a Memcached's status that owner ("operand",
// "stats", "autopilot" or "tls") writes, as that writer does.
func WriteStatusAs(ctx context.Context, c client.Client, owner string, mc *cachev1.Memcached, st *cachev1.MemcachedStatus) error {
	w, ok := map[string]memcachedstatus.Writer{"operand": memcachedstatus.OperandWriter, "stats": memcachedstatus.StatsWriter,
		"autopilot": memcachedstatus.AutopilotWriter, "tls": memcachedstatus.TLSWriter}[owner]
	if !ok {
		return fmt.Errorf("no writer %q", owner)
	}
	return w.Write(ctx, c, mc, st)
}

// AfterStatusWrite is what the operand, stats and autopilot reconcilers return after a status
// write that returned err.
func AfterStatusWrite(err error) (ctrl.Result, error) { return memcachedstatus.AfterWriteError(err) }

// WriteTLSStatus writes mc's CertificatesReady condition (ready) or takes it and status.tls out
// (!ready), as the TLS controller does.
func WriteTLSStatus(ctx context.Context, c client.Client, mc *cachev1.Memcached, ready bool) error {
	r := &servertls.Reconciler{Client: c}
	if !ready {
		return r.RemoveStatus(ctx, mc)
	}
	return r.SetStatus(ctx, mc, &cachev1.HelmCondition{Type: cachev1.ConditionCertificatesReady, Status: metav1.ConditionTrue, Reason: "Written"}, nil)
}

// SetPartition sets the partition of StatefulSet s on the spec of s as read, as the servers
// reconciler holds and lets go of a rollout.
func SetPartition(ctx context.Context, c client.Client, s *appsv1.StatefulSet, partition int32) error {
	return (&servers.Reconciler{Live: c}).SetPartition(ctx, s, partition)
}

// BeforeUpgrade runs the operator's hook before Helm upgrades cr's release from last to target,
// reading and writing through c.
func BeforeUpgrade(ctx context.Context, c client.Client, cr client.Object, last, target *helm.Rendered) error {
	return (&servers.Reconciler{Client: c, Live: c}).BeforeUpgrade(ctx, cr, last, target)
}
