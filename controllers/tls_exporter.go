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
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/rollout"
)

// The exporter of a cache that serves TLS reads memcached's stats in plain text on the pod's
// loopback (the chart's value loopbackStats): it then holds no certificate, and a change of the
// CA that signs the servers' certificate (a user's certificateSecret re-issued by another issuer)
// leaves it reading. memcached_exporter reads its CA file once, at its start.
//
// The listener is a memcached flag, which a running pod cannot take: servers made before it came
// (an operator before 1.4.0) get it only with a change that replaces them anyway, so that an
// operator upgrade replaces no warm server.

// exporterContainer is the chart's name of the exporter's container.
const exporterContainer = "exporter"

// withLoopbackStats sets the chart value loopbackStats of a cache that serves TLS with metrics:
// on, unless the release's StatefulSet runs servers without the listener that are not being
// replaced anyway (loopbackStats).
func withLoopbackStats(ctx context.Context, reader client.Reader, obj *unstructured.Unstructured, vals map[string]any) error {
	tls, _, _ := unstructured.NestedBool(vals, "tls", "enabled")
	metrics, _, _ := unstructured.NestedBool(vals, "metrics", "enabled")
	if !tls || !metrics || reader == nil {
		return nil
	}
	live := &appsv1.StatefulSet{}
	switch err := reader.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: serversNameOf(obj.GetName())}, live); {
	case client.IgnoreNotFound(err) != nil:
		return fmt.Errorf("read the servers of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	case err != nil || !madeForRelease(live, obj):
		live = nil // none yet (or not the release's: Helm refuses it): made with the listener
	}
	st, err := memcachedStatusOf(obj)
	if err != nil {
		return fmt.Errorf("read the status of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	vals["loopbackStats"] = loopbackStats(st, live)
	return nil
}

// loopbackStats says whether the servers of a cache that serves TLS with metrics get memcached's
// loopback listener for the exporter: when there are none yet, when they have it, when they run
// without TLS or exporter (turning either on replaces them), and when the operator is replacing
// them anyway, each starting empty (a change it decided, for the release now deployed or being
// deployed, that the StatefulSet is rolling out): the listener then joins that rollout.
func loopbackStats(st cachev1.MemcachedStatus, live *appsv1.StatefulSet) bool {
	if live == nil {
		return true
	}
	spec := &live.Spec.Template.Spec
	mc := rollout.MemcachedContainer(spec)
	if mc == nil || !slices.Contains(mc.Args, "-Z") || rollout.ContainerNamed(spec, exporterContainer) == nil || servesLoopback(mc) {
		return true
	}
	return replacedAnyway(st, live)
}

// servesLoopback says whether memcached's arguments open its plain-text loopback listener.
func servesLoopback(mc *corev1.Container) bool {
	for i, a := range mc.Args {
		if a == "-l" && i+1 < len(mc.Args) && strings.HasPrefix(mc.Args[i+1], "notls:127.0.0.1:") {
			return true
		}
	}
	return false
}

// replacedAnyway says whether the StatefulSet's servers are being replaced, each starting empty,
// by a rollout the operator decided for the release deployed (or the one being applied: the status
// read may not have its revision yet). Its own record (status.rollout, which only the operator
// writes) must say so, and the StatefulSet must be rolling: held by no partition, and its
// controller either has not seen its newest spec yet or has not brought every pod to it. Both,
// because a wrong yes replaces warm servers.
func replacedAnyway(st cachev1.MemcachedStatus, live *appsv1.StatefulSet) bool {
	if st.Rollout == nil || st.Rollout.Change == nil {
		return false
	}
	c, deployed := st.Rollout.Change, int32(0)
	if st.DeployedRelease != nil {
		deployed = st.DeployedRelease.Revision
	}
	decided := c.Way == cachev1.WayStartedEmpty && c.Phase == cachev1.RolloutRolledOut && c.FromRelease >= deployed-1
	rolling := live.Status.ObservedGeneration < live.Generation || live.Status.UpdateRevision != live.Status.CurrentRevision
	return decided && partitionOf(live) == 0 && rolling
}

// loopbackStatsInputs are the status fields replacedAnyway reads that change when the operator
// decides a rollout: the Helm side reconciles again at once, and the listener joins it.
var loopbackStatsInputs = []string{"rollout.change.phase", "rollout.change.since"}
