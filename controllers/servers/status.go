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

package servers

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/memcachedstatus"
	"github.com/example/memcached-operator/controllers/internal/progress"
	"github.com/example/memcached-operator/controllers/internal/serverset"
	"github.com/example/memcached-operator/controllers/internal/texts"
	"github.com/example/memcached-operator/internal/helm/library"
	"github.com/example/memcached-operator/internal/rollout"
)

// The operand's part of a Memcached's status, from its StatefulSet and pods (see
// reconciler.go and the table in docs/development.md of who writes what).

// operandStatus is mc's status with the Go side's part as the operand is: the release's
// StatefulSet (nil: none), its deployed revision (0: none yet), the number of pods of an earlier
// release still up, the release's pods, and status.rollout as the servers reconciler leaves it.
func operandStatus(mc *cachev1.Memcached, servers *appsv1.StatefulSet, revision int32, retiring int, pods []corev1.Pod, rs *cachev1.RolloutStatus) *cachev1.MemcachedStatus {
	st := mc.Status.DeepCopy()
	st.Rollout = rs.DeepCopy()
	observeOperand(st, servers, retiring, progress.PodTrouble(pods))
	observeServers(st, servers, pods)
	observeRollout(st, servers, time.Now())
	if revision > 0 {
		st.DeployedRelease = &cachev1.HelmRelease{Name: mc.Name, Revision: revision}
	}
	return st
}

// observeOperand computes the Go side's part of the status from the release's StatefulSet (nil:
// not created yet), the number of pods of an earlier release still up, and why a pod cannot
// start or keep running (progress.PodTrouble), if one cannot.
func observeOperand(st *cachev1.MemcachedStatus, servers *appsv1.StatefulSet, retiring int, trouble string) {
	if servers == nil {
		st.Replicas, st.UpdatedReplicas, st.ReadyReplicas = 0, 0, 0
		memcachedstatus.SetCondition(st, cachev1.ConditionAvailable, metav1.ConditionFalse, "ServersMissing",
			"the release's StatefulSet does not exist (not installed yet)")
		memcachedstatus.SetCondition(st, cachev1.ConditionProgressing, metav1.ConditionTrue, "ServersMissing",
			"waiting for the release's StatefulSet")
		return
	}
	ro := progress.OfStatefulSet(servers)
	st.Replicas, st.UpdatedReplicas, st.ReadyReplicas = ro.Replicas, ro.Updated, ro.Ready
	target := templateVersion(servers.Spec.Template)
	if ro.Complete() && retiring == 0 {
		st.Version = target // until then it stays at the version being replaced
	}

	availableMsg := texts.AvailableText(ro.Available, ro.Want, "server", "servers")
	if ro.AllAvailable() {
		memcachedstatus.SetCondition(st, cachev1.ConditionAvailable, metav1.ConditionTrue, "PodsAvailable", availableMsg)
	} else {
		memcachedstatus.SetCondition(st, cachev1.ConditionAvailable, metav1.ConditionFalse, "PodsUnavailable", availableMsg)
	}
	switch {
	case trouble != "" && !ro.Complete():
		memcachedstatus.SetCondition(st, cachev1.ConditionProgressing, metav1.ConditionFalse, cachev1.ReasonPodsFailing, trouble)
	case ro.Complete() && retiring > 0:
		memcachedstatus.SetCondition(st, cachev1.ConditionProgressing, metav1.ConditionTrue, cachev1.ReasonRetiringPods,
			fmt.Sprintf("memcached %s runs on %s; %s of the earlier release %s the Service and %s", target, texts.Count(ro.Want, "server", "servers"),
				texts.Count(retiring, "pod", "pods"), texts.PluralVerb(retiring, "leaves", "leave"), texts.PluralVerb(retiring, "stops", "stop")))
	case ro.Complete():
		memcachedstatus.SetCondition(st, cachev1.ConditionProgressing, metav1.ConditionFalse, "Complete",
			fmt.Sprintf("%s %s memcached %s", texts.Count(ro.Want, "server", "servers"), texts.PluralVerb(ro.Want, "runs", "run"), target))
	default:
		memcachedstatus.SetCondition(st, cachev1.ConditionProgressing, metav1.ConditionTrue, "RollingOut",
			fmt.Sprintf("memcached %s %s", target, ro))
	}
}

// observeServers reports the servers clients shard keys over: their addresses in the order of
// their ordinals (each server's own DNS name through the headless Service, which the StatefulSet
// names), the ready ones, and the ConfigMap that holds the list (the chart names it after the
// StatefulSet).
func observeServers(st *cachev1.MemcachedStatus, servers *appsv1.StatefulSet, pods []corev1.Pod) {
	st.Servers, st.ReadyServers, st.ServersConfigMap = nil, nil, ""
	if servers == nil {
		return
	}
	ready := map[string]bool{}
	for _, p := range pods {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == servers.UID && p.DeletionTimestamp == nil && serverset.PodReady(&p) {
			ready[p.Name] = true
		}
	}
	want := progress.OfStatefulSet(servers).Want
	for i := range want {
		name := fmt.Sprintf("%s-%d", servers.Name, i)
		addr := fmt.Sprintf("%s.%s.%s.svc:%d", name, servers.Spec.ServiceName, servers.Namespace, serverset.Port)
		st.Servers = append(st.Servers, addr)
		if ready[name] {
			st.ReadyServers = append(st.ReadyServers, addr)
		}
	}
	st.ServersConfigMap = servers.Name + "-servers"
}

// templateVersion is the memcached version a pod template runs.
func templateVersion(template corev1.PodTemplateSpec) string {
	return rollout.TemplateVersion(template)
}

// helmOutcome is what the Helm side last said of the release: library.ConditionDeployed when
// it is deployed, ConditionReleaseFailed or ConditionIrreconcilable when it could not be, or ""
// before the Helm side's first status write.
func helmOutcome(st cachev1.MemcachedStatus) string {
	for _, typ := range []string{library.ConditionIrreconcilable, library.ConditionReleaseFailed, library.ConditionDeployed} {
		if memcachedstatus.Condition(st, typ).Status == metav1.ConditionTrue {
			return typ
		}
	}
	for _, typ := range []string{library.ConditionDeployed, library.ConditionReleaseFailed, library.ConditionIrreconcilable} {
		if memcachedstatus.Condition(st, typ).Type != "" {
			return library.ConditionReleaseFailed // said, but not deployed
		}
	}
	return ""
}
