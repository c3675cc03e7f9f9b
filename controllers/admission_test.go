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
	"encoding/json"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Bad input is refused at admission by the CRD schema and its CEL rules, with a message that
// names the field and the rule: whatever the operator would refuse or fail on later. The test
// client validates fields strictly, as kubectl does by default. Each class of bad input has its
// refused cases, and valid input of the same fields is accepted (a server-side dry run, so the
// operator never sees it).
var _ = Describe("Admission of bad input", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace(context.Background()) })

	refused := func(kind, name, spec, wantMessage string) {
		err := k8sClient.Create(context.Background(), cr(kind, ns, name, spec), client.DryRunAll)
		Expect(err).To(HaveOccurred(), "a %s %q with spec %q must be refused", kind, name, spec)
		Expect(apiErrorText(err.Error())).To(ContainSubstring(apiErrorText(wantMessage)))
	}
	accepted := func(kind, name, spec string) {
		Expect(k8sClient.Create(context.Background(), cr(kind, ns, name, spec), client.DryRunAll)).To(Succeed(),
			"a %s %q with spec %q is valid", kind, name, spec)
	}

	DescribeTable("refuses", func(kind, spec, wantMessage string) { refused(kind, "bad", spec, wantMessage) },
		// types and bounds
		Entry("a Memcached with a string replicaCount", "Memcached", "  replicaCount: three",
			`spec.replicaCount: Invalid value: "string": spec.replicaCount in body must be of type integer`),
		Entry("a Memcached with a negative replicaCount", "Memcached", "  replicaCount: -1",
			"spec.replicaCount: Invalid value: -1: spec.replicaCount in body should be greater than or equal to 0"),
		Entry("a Memcached with too many replicas", "Memcached", "  replicaCount: 1000",
			"spec.replicaCount in body should be less than or equal to 100"),
		Entry("a Memcached whose certificate Secret is no Secret name", "Memcached", "  tls: {enabled: true, certificateSecret: \"Their_Cert\"}",
			`spec.tls.certificateSecret: Invalid value: "Their_Cert": spec.tls.certificateSecret in body should match`),
		Entry("a Memcached with zero threads", "Memcached", "  memcached: {threads: 0}",
			"spec.memcached.threads in body should be greater than or equal to 1"),
		Entry("a Memcached with an unknown anti-affinity", "Memcached", "  antiAffinity: maybe",
			`spec.antiAffinity: Unsupported value: "maybe": supported values: "soft", "hard", "none"`),
		Entry("a Memcached with a port out of range", "Memcached", "  service: {port: 70000}",
			"spec.service.port in body should be less than or equal to 65535"),
		Entry("a Memcached with an unknown field", "Memcached", "  replicas: 3",
			`unknown field "spec.replicas"`),
		Entry("a Memcached with an unknown nested field", "Memcached", "  memcached: {memory: 64}",
			`unknown field "spec.memcached.memory"`),
		Entry("a MemcachedBackup with a negative size", "MemcachedBackup", "  size: -1",
			"spec.size in body should be greater than or equal to 0"),
		Entry("a MemcachedBackup with a string size", "MemcachedBackup", "  size: '2'",
			"spec.size in body must be of type integer"),
		Entry("a MemcachedBackup without size", "MemcachedBackup", "  {}",
			"spec.size: Required value"),
		Entry("a MemcachedBackup with an unknown field", "MemcachedBackup", "  size: 1\n  replicas: 1",
			`unknown field "spec.replicas"`),

		// memcached flags: memory, item size, extraArgs, ports
		Entry("too little memory", "Memcached", "  memcached: {maxMemoryMB: 8}",
			"spec.memcached.maxMemoryMB in body should be greater than or equal to 16"),
		Entry("too little memory under the 0.1.0 name", "Memcached", "  memcached: {memoryLimitMB: 8}",
			"spec.memcached.memoryLimitMB in body should be greater than or equal to 16"),
		Entry("both names of the memory, disagreeing", "Memcached", "  memcached: {memoryLimitMB: 128, maxMemoryMB: 256}",
			"memoryLimitMB is the old name of maxMemoryMB: set maxMemoryMB only"),
		Entry("a malformed item size", "Memcached", "  memcached: {maxItemSize: big}",
			"spec.memcached.maxItemSize in body should match"),
		Entry("an item size memcached's slab chunks do not divide", "Memcached", "  memcached: {maxItemSize: 700k}",
			"spec.memcached.maxItemSize: Invalid value: maxItemSize must be a multiple of 512k"),
		Entry("an item size below memcached's slab chunk", "Memcached", "  memcached: {maxItemSize: 64k}",
			"maxItemSize must be a multiple of 512k"),
		Entry("an item size above half the memory", "Memcached", "  memcached: {maxMemoryMB: 64, maxItemSize: 33m}",
			"spec.memcached.maxItemSize: Invalid value: maxItemSize can be at most half of maxMemoryMB"),
		Entry("an item size above half the memory under its 0.1.0 name", "Memcached", "  memcached: {memoryLimitMB: 16, maxItemSize: 9m}",
			"maxItemSize can be at most half of maxMemoryMB"),
		Entry("an item size above memcached's 1024m", "Memcached", "  memcached: {maxMemoryMB: 65536, maxItemSize: 2048m}",
			"maxItemSize can be at most 1024m"),
		Entry("an extra arg for the port the probes and Service use", "Memcached", "  memcached: {extraArgs: ['-p', '11212']}",
			"spec.memcached.extraArgs: Invalid value: extraArgs: each argument must be one allowed memcached flag"),
		Entry("an extra arg for the listen address", "Memcached", "  memcached: {extraArgs: ['-l0.0.0.0']}",
			"extraArgs: each argument must be one allowed memcached flag"),
		Entry("an extra arg for the memory past the container's limit", "Memcached", "  memcached: {extraArgs: ['--memory-limit=4096']}",
			"extraArgs: each argument must be one allowed memcached flag"),
		Entry("an extra arg that opens UDP", "Memcached", "  memcached: {extraArgs: ['-U11211']}",
			"extraArgs: each argument must be one allowed memcached flag"),
		Entry("an extra arg that opens UDP in a cluster of short flags", "Memcached", "  memcached: {extraArgs: ['-vU11211']}",
			"extraArgs: each argument must be one allowed memcached flag"),
		Entry("an extra arg that allows remote shutdown", "Memcached", "  memcached: {extraArgs: ['-A']}",
			"extraArgs: each argument must be one allowed memcached flag"),
		Entry("an extra arg that daemonizes", "Memcached", "  memcached: {extraArgs: ['-d']}",
			"extraArgs: each argument must be one allowed memcached flag"),
		Entry("an extra arg with a flag and its value as one string with a space", "Memcached", "  memcached: {extraArgs: ['-R 20']}",
			"extraArgs: each argument must be one allowed memcached flag"),
		Entry("an extended option outside the list", "Memcached", "  memcached: {extraArgs: ['-omodern,ssl_chain_cert=/etc/passwd']}",
			"extraArgs: each argument must be one allowed memcached flag"),
		Entry("an extra arg of memcached's threads, which the spec sets", "Memcached", "  memcached: {extraArgs: ['--threads=64']}",
			"extraArgs: each argument must be one allowed memcached flag"),
		Entry("a growth factor memcached refuses", "Memcached", "  memcached: {extraArgs: ['-f1.0']}",
			"extraArgs: each argument must be one allowed memcached flag"),
		Entry("an unknown keepCacheAcross", "Memcached", "  keepCacheAcross: Everything",
			`spec.keepCacheAcross: Unsupported value: "Everything": supported values: "MemoryChanges", "Restarts"`),
		Entry("a metrics port on memcached's port", "Memcached", "  metrics: {enabled: true, port: 11211}",
			"spec.metrics.port: Invalid value: 11211: metrics.port cannot be 11211"),
		Entry("a metrics port on the Service's port", "Memcached", "  service: {port: 9150}\n  metrics: {enabled: true, port: 9150}",
			"spec.metrics.port: Invalid value: metrics.port and service.port must differ"),
		Entry("a ServiceMonitor but no exporter", "Memcached", "  metrics: {serviceMonitor: {enabled: true}}",
			"metrics.serviceMonitor.enabled needs metrics.enabled"),
		Entry("a ServiceMonitor interval Prometheus cannot read", "Memcached", "  metrics: {serviceMonitor: {interval: 30sec}}",
			"spec.metrics.serviceMonitor.interval in body should match"),
		Entry("an alert duration Prometheus cannot read", "Memcached", "  metrics: {prometheusRule: {for: {evictions: 15 minutes}}}",
			"spec.metrics.prometheusRule.for.evictions in body should match"),
		Entry("a runbook URL that would run as a Prometheus template", "Memcached", "  metrics: {prometheusRule: {runbookURL: 'https://x/{{ query \"up\" }}'}}",
			"spec.metrics.prometheusRule.runbookURL in body should match"),

		// images
		Entry("a tag that is not a memcached version", "Memcached", "  image: {tag: latest}",
			"spec.image.tag: Invalid value: this operator runs memcached 1.6"),
		Entry("a memcached version the operator does not run", "Memcached", "  image: {tag: 1.5.22}",
			"this operator runs memcached 1.6"),
		Entry("a newer major version of memcached", "Memcached", "  image: {tag: 2.0.0}",
			"this operator runs memcached 1.6"),
		Entry("a malformed digest", "Memcached", "  image: {digest: 'md5:abc'}",
			"spec.image.digest in body should match"),
		Entry("a repository with an embedded tag", "Memcached", "  image: {repository: 'docker.io/library/memcached:1.6'}",
			"spec.image.repository in body should match"),
		Entry("a repository with an embedded digest", "Memcached", "  image: {repository: 'memcached@sha256:0123'}",
			"spec.image.repository in body should match"),
		Entry("an exporter repository with spaces", "Memcached", "  metrics: {image: {repository: 'prom/memcached exporter'}}",
			"spec.metrics.image.repository in body should match"),

		// resources
		Entry("a negative cpu limit", "Memcached", "  resources: {limits: {cpu: '-1'}}",
			"spec.resources.limits.cpu in body should match"),
		Entry("a fractional exponent, which Kubernetes cannot parse", "Memcached", "  resources: {limits: {cpu: '1e1.5'}}",
			"spec.resources.limits.cpu in body should match"),
		Entry("a negative memory request as a number", "Memcached", "  resources: {requests: {memory: -5}}",
			"spec.resources.requests.memory: Invalid value: -5: quantities cannot be negative"),
		Entry("a cpu request above its limit", "Memcached", "  resources: {requests: {cpu: '2'}, limits: {cpu: 1500m}}",
			"spec.resources.requests.cpu: Invalid value: resources: the cpu request cannot be above its limit"),
		Entry("a memory request above its limit", "Memcached", "  resources: {requests: {memory: 1Gi}, limits: {memory: 512Mi}}",
			"resources: the memory request cannot be above its limit"),
		Entry("a storage request in exponent form above its limit", "Memcached", "  resources: {requests: {ephemeral-storage: '2e9'}, limits: {ephemeral-storage: 1Gi}}",
			"resources: the ephemeral-storage request cannot be above its limit"),
		Entry("a memory request in exa above a limit in exbi", "Memcached", "  resources: {requests: {memory: 2E}, limits: {memory: 1Ei}}",
			"resources: the memory request cannot be above its limit"),
		Entry("a memory request one byte above a limit of 1Ti", "Memcached", "  resources: {requests: {memory: '1099511627777'}, limits: {memory: 1Ti}}",
			"resources: the memory request cannot be above its limit"),
		Entry("a memory limit below the item memory", "Memcached", "  memcached: {maxMemoryMB: 128}\n  resources: {limits: {memory: 100Mi}}",
			"spec.resources.limits.memory: Invalid value: resources.limits.memory must be at least memcached.maxMemoryMB + 32Mi"),
		Entry("a memory limit below the default item memory", "Memcached", "  resources: {limits: {memory: '64000000'}}",
			"resources.limits.memory must be at least memcached.maxMemoryMB + 32Mi"),
		Entry("an unknown resource", "Memcached", "  resources: {limits: {nvidia.com/gpu: 1}}",
			`unknown field "spec.resources.limits.nvidia.com/gpu"`),
		Entry("resource claims", "Memcached", "  resources: {claims: [{name: gpu}]}",
			`unknown field "spec.resources.claims"`),
		Entry("a malformed quantity", "Memcached", "  resources: {requests: {cpu: lots}}",
			"spec.resources.requests.cpu in body should match"),

		// PodDisruptionBudget
		Entry("a percentage above 100%", "Memcached", "  podDisruptionBudget: {maxUnavailable: 150%}",
			"spec.podDisruptionBudget.maxUnavailable: Invalid value: \"150%\": maxUnavailable must be a number of pods (0 or more) or a percentage from 0% to 100%"),
		Entry("a negative maxUnavailable", "Memcached", "  podDisruptionBudget: {maxUnavailable: -1}",
			"maxUnavailable must be a number of pods (0 or more) or a percentage"),
		Entry("a maxUnavailable that is neither", "Memcached", "  podDisruptionBudget: {maxUnavailable: one}",
			"maxUnavailable must be a number of pods (0 or more) or a percentage"),
		Entry("a maxUnavailable that adds an object", "Memcached", "  podDisruptionBudget: {maxUnavailable: \"1\\n---\\napiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: x\\n  namespace: kube-system\"}",
			"spec.podDisruptionBudget.maxUnavailable: Too long"),

		// placement and metadata
		Entry("a toleration with an unknown operator", "Memcached", "  tolerations: [{key: k, operator: Sometimes}]",
			`spec.tolerations[0].operator: Unsupported value: "Sometimes": supported values: "Exists", "Equal", ""`),
		Entry("a toleration with an unknown effect", "Memcached", "  tolerations: [{key: k, effect: NoWay}]",
			`spec.tolerations[0].effect: Unsupported value: "NoWay"`),
		Entry("a toleration Exists with a value", "Memcached", "  tolerations: [{key: k, operator: Exists, value: v}]",
			"spec.tolerations[0]: Invalid value: a toleration with operator Exists takes no value"),
		Entry("a toleration without key that is not Exists", "Memcached", "  tolerations: [{value: v}]",
			"a toleration without key must have operator Exists"),
		Entry("a toleration with seconds but no NoExecute", "Memcached", "  tolerations: [{key: k, effect: NoSchedule, tolerationSeconds: 30}]",
			"tolerationSeconds needs effect NoExecute"),
		Entry("a toleration with a key that is no label key", "Memcached", "  tolerations: [{key: 'bad key', operator: Exists}]",
			"spec.tolerations[0].key: Invalid value: \"bad key\": key must be a label key"),
		Entry("a nodeSelector key that is no label key", "Memcached", "  nodeSelector: {'bad key': x}",
			"spec.nodeSelector: Invalid value: nodeSelector keys must be label keys"),
		Entry("a nodeSelector value that is no label value", "Memcached", "  nodeSelector: {disk: 'ssd/fast'}",
			"spec.nodeSelector.disk in body should match"),
		Entry("a pod label value too long for a label", "Memcached", "  podLabels: {team: "+strings.Repeat("a", 64)+"}",
			"spec.podLabels.team: Too long"),
		Entry("a pod label key with a prefix too long", "Memcached", "  podLabels: {"+strings.Repeat("a", 250)+".example.com/team: a}",
			"podLabels keys must be label keys"),
		Entry("pod labels that override the selector", "Memcached", "  podLabels: {app.kubernetes.io/instance: other}",
			"spec.podLabels: Invalid value: podLabels cannot set the labels the chart sets"),
		Entry("a pod annotation that weakens AppArmor", "Memcached", "  podAnnotations: {container.apparmor.security.beta.kubernetes.io/memcached: unconfined}",
			"spec.podAnnotations: Invalid value: podAnnotations cannot set the pod's AppArmor or seccomp profile or its OpenShift SCC"),
		Entry("a pod annotation that weakens seccomp", "Memcached", "  podAnnotations: {seccomp.security.alpha.kubernetes.io/pod: unconfined}",
			"podAnnotations cannot set the pod's AppArmor or seccomp profile"),
		Entry("a pod annotation that picks an OpenShift SCC", "Memcached", "  podAnnotations: {openshift.io/required-scc: privileged}",
			"podAnnotations cannot set the pod's AppArmor or seccomp profile or its OpenShift SCC"),
		Entry("a pod annotation key that is no qualified name", "Memcached", "  podAnnotations: {'a b': x}",
			"podAnnotations keys must be qualified names"),
		Entry("a priorityClassName that adds pod fields", "Memcached", "  priorityClassName: \"x\\n      hostNetwork: true\\n      hostPID: true\"",
			"spec.priorityClassName in body should match"),
		Entry("a priorityClassName of the system classes", "Memcached", "  priorityClassName: system-cluster-critical",
			"priorityClassName: the system- priority classes are for kube-system"),
		Entry("an image pull secret name that adds pod fields", "Memcached", "  imagePullSecrets: [{name: \"x\\n      hostNetwork: true\"}]",
			"spec.imagePullSecrets[0].name in body should match"),
		Entry("an image pull secret without a name", "Memcached", "  imagePullSecrets: [{}]",
			"spec.imagePullSecrets[0].name: Required value"),
		Entry("the same image pull secret twice", "Memcached", "  imagePullSecrets: [{name: mirror}, {name: mirror}]",
			"spec.imagePullSecrets[1]: Duplicate value"),
		Entry("more than 8 image pull secrets", "MemcachedBackup", "  size: 1\n  imagePullSecrets: [{name: a}, {name: b}, {name: c}, {name: d}, {name: e}, {name: f}, {name: g}, {name: h}, {name: i}]",
			"spec.imagePullSecrets: Too many: 9: must have at most 8 items"),
		Entry("a MemcachedBackup image pull secret with an upper-case name", "MemcachedBackup", "  size: 1\n  imagePullSecrets: [{name: Mirror}]",
			"spec.imagePullSecrets[0].name in body should match"),

		// NetworkPolicy
		Entry("an allowed client that selects nothing", "Memcached", "  networkPolicy: {allowedClients: [{}]}",
			"spec.networkPolicy.allowedClients[0]: Invalid value: a peer needs a namespaceSelector, a podSelector or both"),
		Entry("an allowed client with a key that is no label key", "Memcached", "  networkPolicy: {allowedClients: [{podSelector: {matchLabels: {'a b': c}}}]}",
			"matchLabels keys must be label keys"),
		Entry("an In requirement without values", "Memcached", "  networkPolicy: {allowedClients: [{podSelector: {matchExpressions: [{key: app, operator: In}]}}]}",
			"In and NotIn need values; Exists and DoesNotExist take none"),
		Entry("an unknown selector operator", "Memcached", "  networkPolicy: {allowedClients: [{podSelector: {matchExpressions: [{key: app, operator: Maybe}]}}]}",
			`Unsupported value: "Maybe"`),
		Entry("a metrics namespace that is no namespace name", "Memcached", "  networkPolicy: {metricsNamespace: Monitoring}",
			"spec.networkPolicy.metricsNamespace in body should match"),
	)

	DescribeTable("refuses names Helm, Services and labels cannot take", refused,
		Entry("a Memcached name longer than a Helm release name", "Memcached", strings.Repeat("m", 54), "  {}",
			"metadata.name: Too long: may not be more than 53"),
		Entry("a Memcached name with a dot (its Service's name)", "Memcached", "memcached.sample", "  {}",
			"metadata.name in body should match"),
		Entry("a Memcached name starting with a digit (its Service's name)", "Memcached", "1memcached", "  {}",
			"metadata.name in body should match"),
		Entry("a MemcachedBackup name longer than a label value", "MemcachedBackup", strings.Repeat("b", 64), "  size: 1",
			"metadata.name: Too long: may not be more than 63"),
		Entry("a MemcachedBackup name with a dot", "MemcachedBackup", "backup.one", "  size: 1",
			"metadata.name in body should match"),
	)

	DescribeTable("accepts", accepted,
		Entry("a Memcached name as long as Helm allows", "Memcached", strings.Repeat("m", 53), "  {}"),
		Entry("a MemcachedBackup name as long as a label value", "MemcachedBackup", strings.Repeat("b", 63), "  size: 1"),
		Entry("the memory under its 0.1.0 name", "Memcached", "ok", "  memcached: {memoryLimitMB: 128}"),
		Entry("a warm-restarting cache of the default memory", "Memcached", "ok", "  keepCacheAcross: Restarts"),
		Entry("a warm-restarting cache of the least memory, the autopilot adding servers", "Memcached", "ok",
			"  keepCacheAcross: Restarts\n  memcached: {maxMemoryMB: 39}\n  autoscaling: {enabled: true, maxReplicas: 4, maxMemoryMB: 39}"),
		Entry("memory in place with little memory", "Memcached", "ok", "  keepCacheAcross: MemoryChanges\n  memcached: {maxMemoryMB: 16}"),
		Entry("item sizes memcached takes", "Memcached", "ok", "  memcached: {maxMemoryMB: 64, maxItemSize: 32m}"),
		Entry("an item size in k", "Memcached", "ok", "  memcached: {maxItemSize: 1536K}"),
		Entry("the smallest item size", "Memcached", "ok", "  memcached: {maxMemoryMB: 16, maxItemSize: 512k}"),
		Entry("tuning flags", "Memcached", "ok",
			"  memcached: {extraArgs: ['-vv', '-R20', '--max-reqs-per-event=40', '-f1.25', '--slab-min-size=48', '-b2048', '-Bascii', '-C', '-M', '--disable-flush-all', '-omodern,slab_reassign,slab_automove=1', '--extended=idle_timeout=600,track_sizes']}"),
		Entry("memcached version tags", "Memcached", "ok", "  image: {tag: v1.6.39-alpine}"),
		Entry("a short memcached version tag", "Memcached", "ok", "  image: {tag: '1.6'}"),
		Entry("a digest without tag", "Memcached", "ok", "  image: {digest: 'sha256:"+strings.Repeat("ab", 32)+"'}"),
		Entry("a repository on a registry with a port and -- in its path", "Memcached", "ok",
			"  image: {repository: 'registry.example.com:5000/mirror--team/memcached'}"),
		Entry("repository paths with _ and __", "Memcached", "ok", "  image: {repository: 'localhost/my_team/mem__cached'}"),
		Entry("a ServiceMonitor interval of minutes and seconds", "Memcached", "ok",
			"  metrics: {enabled: true, serviceMonitor: {interval: 1m30s}}"),
		Entry("alerts with a duration of hours and minutes and a runbook URL of one's own", "Memcached", "ok",
			"  metrics: {enabled: true, prometheusRule: {for: {hitRatio: 1h30m}, runbookURL: 'https://wiki.example.com/runbooks/memcached/'}}"),
		Entry("resources as numbers and strings", "Memcached", "ok",
			"  resources: {requests: {cpu: 100m, memory: 96Mi, ephemeral-storage: 1Gi}, limits: {cpu: 1, memory: '100663296', ephemeral-storage: 2G}}"),
		Entry("a memory limit given in exponent form", "Memcached", "ok", "  resources: {limits: {memory: 1e9}}"),
		Entry("requests at their limits in other units", "Memcached", "ok",
			"  resources: {requests: {cpu: '0.5', memory: 1E, ephemeral-storage: '1e3'}, limits: {cpu: 500m, memory: 1Ei, ephemeral-storage: 1k}}"),
		Entry("requests equal to their limits where doubles round", "Memcached", "ok",
			"  resources: {requests: {cpu: 9m, memory: 4.1e9, ephemeral-storage: 16.1k}, limits: {cpu: '0.009', memory: 4.1G, ephemeral-storage: '16100'}}"),
		Entry("micro and nano cores", "Memcached", "ok", "  resources: {requests: {cpu: 100000u}, limits: {cpu: 100000000n}}"),
		Entry("the memory limit the chart's default gives", "Memcached", "ok", "  memcached: {maxMemoryMB: 128}\n  resources: {limits: {memory: 160Mi}}"),
		Entry("maxUnavailable as pods and percentages", "Memcached", "ok", "  podDisruptionBudget: {maxUnavailable: 50%}"),
		Entry("maxUnavailable 0", "Memcached", "ok", "  podDisruptionBudget: {maxUnavailable: 0}"),
		Entry("maxUnavailable 100%", "Memcached", "ok", "  podDisruptionBudget: {maxUnavailable: 100%}"),
		Entry("tolerations as Kubernetes takes them", "Memcached", "ok",
			"  tolerations: [{key: dedicated, operator: Equal, value: cache, effect: NoSchedule}, {operator: Exists}, {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 30}, {key: k, operator: '', effect: ''}]"),
		Entry("labels, selectors and annotations", "Memcached", "ok",
			"  nodeSelector: {kubernetes.io/os: linux, disk: ''}\n  podLabels: {team: cache, example.com/tier: a.b_c-d}\n  podAnnotations: {prometheus.io/scrape: 'true', example.com/config: '{\"a\": [1, 2]}'}"),
		Entry("a priority class", "Memcached", "ok", "  priorityClassName: high-priority.example.com"),
		Entry("allowed clients and a metrics namespace", "Memcached", "ok",
			"  networkPolicy: {metricsNamespace: openshift-monitoring, allowedClients: [{namespaceSelector: {}}, {namespaceSelector: {matchLabels: {team: web}}, podSelector: {matchExpressions: [{key: app, operator: In, values: [api, web]}, {key: canary, operator: DoesNotExist}]}}]}"),
		Entry("no NetworkPolicy", "Memcached", "ok", "  networkPolicy: {enabled: false}"),
		Entry("a certificate Secret of the user's", "Memcached", "ok", "  tls: {enabled: true, certificateSecret: cache-cert.v2}"),
	)

	It("publishes the schema with descriptions, so kubectl explain memcached.spec describes the fields", func() {
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		paths, err := dc.OpenAPIV3().Paths()
		Expect(err).NotTo(HaveOccurred())
		gv, ok := paths["apis/cache.my.domain/v1"]
		Expect(ok).To(BeTrue(), "the API server publishes OpenAPI v3 for cache.my.domain/v1")
		raw, err := gv.Schema("application/json")
		Expect(err).NotTo(HaveOccurred())
		var doc struct {
			Components struct {
				Schemas map[string]struct {
					Properties map[string]struct {
						Description string `json:"description"`
						Properties  map[string]struct {
							Description string `json:"description"`
						} `json:"properties"`
					} `json:"properties"`
				} `json:"schemas"`
			} `json:"components"`
		}
		Expect(json.Unmarshal(raw, &doc)).To(Succeed())
		spec := doc.Components.Schemas["domain.my.cache.v1.Memcached"].Properties["spec"]
		Expect(spec.Description).To(ContainSubstring("values of the memcached chart"))
		Expect(spec.Properties).To(HaveKey("replicaCount"))
		for name, field := range spec.Properties {
			Expect(field.Description).NotTo(BeEmpty(), "spec.%s has no description for kubectl explain", name)
		}
	})
})

// Kubernetes versions word the same refusal differently: 1.28 shows the type of an invalid value
// ("object", "string") where later versions show the value or nothing, and says "longer than"
// where they say "more than". apiErrorText drops what differs, so that the same expectations
// hold on the oldest supported Kubernetes and the newest.
var apiErrorValue = regexp.MustCompile(`Invalid value: (?:"[^"]*"|-?[0-9.]+): `)

func apiErrorText(s string) string {
	s = apiErrorValue.ReplaceAllString(s, "Invalid value: ")
	return strings.ReplaceAll(s, "may not be longer than", "may not be more than")
}
