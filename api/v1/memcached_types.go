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

package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The Memcached spec is the values of the Helm chart helm-charts/memcached. These Go types are the
// one source of truth for its schema: controller-gen turns them into the CRD, and
// `make chart-schema` turns the CRD into the chart's values.schema.json. Defaults set here are
// written into the CR by the API server and must equal the chart's values.yaml (a test checks it).
// Fields without a default (image, resources) are filled in by the chart and the operator on
// every reconcile, so that an operator upgrade can move them.

// MemcachedSpec configures a memcached cluster: the values of the memcached Helm chart.
// +kubebuilder:validation:XValidation:rule=`!has(self.resources) || !has(self.resources.limits) || !has(self.resources.limits.memory) || (type(self.resources.limits.memory) == int ? double(self.resources.limits.memory) : string(self.resources.limits.memory).matches(r'[eE][-+]?[0-9]') ? double(string(self.resources.limits.memory)) : double(string(self.resources.limits.memory).find(r'^[-+]?[0-9]*\.?[0-9]*')) * {"": 1.0, 'm': 0.001, 'k': 1000.0, 'M': 1000000.0, 'G': 1e9, 'T': 1e12, 'P': 1e15, 'E': 1e18, 'Ki': 1024.0, 'Mi': 1048576.0, 'Gi': 1073741824.0, 'Ti': 1099511627776.0, 'Pi': 1125899906842624.0, 'Ei': 1152921504606846976.0}[string(self.resources.limits.memory).substring(string(self.resources.limits.memory).find(r'^[-+]?[0-9]*\.?[0-9]*').size())]) >= double((has(self.memcached) && has(self.memcached.memoryLimitMB) ? self.memcached.memoryLimitMB : has(self.memcached) && has(self.memcached.maxMemoryMB) ? self.memcached.maxMemoryMB : 64) + 32) * 1048576.0`,message="resources.limits.memory must be at least memcached.maxMemoryMB + 32Mi: memcached uses that much beyond its item memory (connections, hash table), and is killed when it reaches the limit",fieldPath=".resources.limits.memory"
// +kubebuilder:validation:XValidation:rule=`!has(self.metrics) || !has(self.metrics.enabled) || !self.metrics.enabled || !has(self.service) || !has(self.service.port) || !has(self.metrics.port) || self.service.port != self.metrics.port`,message="metrics.port and service.port must differ: the Service serves both",fieldPath=".metrics.port"
type MemcachedSpec struct {
	// replicaCount is the number of memcached pods.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=1
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Replicas",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	ReplicaCount *int32 `json:"replicaCount,omitempty"`

	// minReadySeconds is how long a memcached server that a rollout replaced must be ready before
	// the next is replaced: servers are replaced one at a time, so at most one server's share of
	// the keys is cold at any moment (Kubernetes 1.35 and later; before, the StatefulSet controller
	// replaces the next once the last is Ready). Unset: 10 (the chart's default; no schema default, so that
	// an earlier operator's chart still takes CRs the new CRD defaulted during an upgrade).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Seconds a replaced server is ready before the next",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number","urn:alm:descriptor:com.tectonic.ui:advanced"}
	MinReadySeconds *int32 `json:"minReadySeconds,omitempty"`

	// image selects the memcached container image. Unset fields take the operator's default
	// (the RELATED_IMAGE_MEMCACHED image of the operator, else the chart's pinned memcached image).
	// A tag must name a memcached 1.6 version (the operator's flags and probes are memcached
	// 1.6's); an image pinned by digest alone is accepted as it is.
	// +kubebuilder:validation:XValidation:rule=`!has(self.tag) || self.tag.matches(r'^v?1\.6(\.[0-9]+)?([-_+][0-9A-Za-z.+_-]*)?$')`,message="this operator runs memcached 1.6: use a 1.6 version tag such as 1.6.39 (not latest), or pin a digest",fieldPath=".tag"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Image"
	Image *ImageSpec `json:"image,omitempty"`

	// memcached holds the memcached server flags.
	// +kubebuilder:default={}
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Memcached server flags"
	Memcached *MemcachedServer `json:"memcached,omitempty"`

	// resources of the memcached container: cpu, memory and ephemeral-storage, each request at
	// most its limit, and a memory limit that leaves 32Mi above maxMemoryMB for memcached's own use
	// (connections, hash table). Unset requests and limits take the chart's defaults.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Resources",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:resourceRequirements"}
	Resources *ResourceRequirements `json:"resources,omitempty"`

	// podDisruptionBudget limits voluntary disruptions of the memcached pods.
	// +kubebuilder:default={}
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pod disruption budget"
	PodDisruptionBudget *PodDisruptionBudgetSpec `json:"podDisruptionBudget,omitempty"`

	// antiAffinity spreads the pods over nodes: "soft" prefers distinct nodes, "hard" requires
	// them, "none" does not care.
	// +kubebuilder:validation:Enum=soft;hard;none
	// +kubebuilder:default=soft
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Anti-affinity",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:soft","urn:alm:descriptor:com.tectonic.ui:select:hard","urn:alm:descriptor:com.tectonic.ui:select:none"}
	AntiAffinity string `json:"antiAffinity,omitempty"`

	// service configures the ClusterIP Service in front of the pods.
	// +kubebuilder:default={}
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Service"
	Service *ServiceSpec `json:"service,omitempty"`

	// networkPolicy fences memcached, which has no authentication: only pods of the Memcached's
	// namespace, the operator and the peers it names reach memcached, and only the monitoring
	// namespace reaches the exporter. On by default (the chart's default). No schema default: the
	// API server would write it into the CRs of earlier releases, whose operators refuse values
	// their chart does not know while an upgrade replaces them.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Network policy"
	NetworkPolicy *NetworkPolicySpec `json:"networkPolicy,omitempty"`

	// metrics configures the Prometheus memcached exporter sidecar and its ServiceMonitor.
	// +kubebuilder:default={}
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Metrics"
	Metrics *MetricsSpec `json:"metrics,omitempty"`

	// nodeSelector constrains the pods to nodes with these labels (keys and values as Kubernetes
	// label keys and values).
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k.matches(r'^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!k.contains('/') || k.indexOf('/') <= 253))`,message="nodeSelector keys must be label keys: an optional DNS subdomain prefix and '/', then at most 63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Node selector",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	NodeSelector map[string]LabelValue `json:"nodeSelector,omitempty"`

	// tolerations of the pods, as Kubernetes validates them.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Tolerations",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Tolerations []Toleration `json:"tolerations,omitempty"`

	// podAnnotations are added to the pods. Annotations that set the pod's AppArmor or seccomp
	// profile, or its OpenShift SCC, are refused: the chart sets the pod's security.
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k.matches(r'^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!k.contains('/') || k.indexOf('/') <= 253))`,message="podAnnotations keys must be qualified names: an optional DNS subdomain prefix and '/', then at most 63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
	// +kubebuilder:validation:XValidation:rule=`!self.exists(k, k.startsWith('container.apparmor.security.beta.kubernetes.io/') || k.startsWith('seccomp.security.alpha.kubernetes.io/') || k.startsWith('container.seccomp.security.alpha.kubernetes.io/') || k in ['openshift.io/scc', 'openshift.io/required-scc'])`,message="podAnnotations cannot set the pod's AppArmor or seccomp profile or its OpenShift SCC: the chart runs memcached under the restricted profile"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pod annotations",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	PodAnnotations map[string]AnnotationValue `json:"podAnnotations,omitempty"`

	// podLabels are added to the pods (keys and values as Kubernetes label keys and values). The
	// labels the chart sets itself, which select the pods, cannot be set here.
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k.matches(r'^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!k.contains('/') || k.indexOf('/') <= 253))`,message="podLabels keys must be label keys: an optional DNS subdomain prefix and '/', then at most 63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
	// +kubebuilder:validation:XValidation:rule=`!self.exists(k, k in ['app.kubernetes.io/name', 'app.kubernetes.io/instance', 'app.kubernetes.io/component', 'app.kubernetes.io/part-of', 'app.kubernetes.io/version', 'app.kubernetes.io/managed-by', 'helm.sh/chart', 'pod-template-hash'])`,message="podLabels cannot set the labels the chart sets (app.kubernetes.io/name, instance, component, part-of, version, managed-by, helm.sh/chart, pod-template-hash): they select the pods"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pod labels",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	PodLabels map[string]LabelValue `json:"podLabels,omitempty"`

	// imagePullSecrets are Secrets in this namespace that the pods pull their images with, e.g.
	// from a private mirror (see LocalSecretReference).
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Image pull secrets",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	ImagePullSecrets []LocalSecretReference `json:"imagePullSecrets,omitempty"`

	// priorityClassName of the pods: the name of a PriorityClass (a DNS subdomain). The system-
	// classes are for kube-system only, and refused.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$`
	// +kubebuilder:validation:XValidation:rule=`!self.startsWith('system-')`,message="priorityClassName: the system- priority classes are for kube-system"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Priority class",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// autoscaling lets the operator size this cache from memcached's own figures (Auto Pilot):
	// off unless enabled. While it is on, the servers' item memory (grown and shrunk in place,
	// without a restart) and their number are the autopilot's choice within these bounds;
	// status.autopilot says what it chose and why, and replicaCount and memcached.maxMemoryMB
	// are where it starts and the least it goes back to. Turned off, the cache goes back to
	// replicaCount and memcached.maxMemoryMB. See docs/autopilot.md. (Added in 1.3.0 without a
	// schema default: an earlier operator's chart refuses values it does not know.)
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Autoscaling"
	Autoscaling *AutoscalingSpec `json:"autoscaling,omitempty"`

	// keepCacheAcross says which of two changes the servers keep their items across; memcached
	// (1.6) does one or the other, not both (docs/upgrades.md, "What keeps the cache warm"):
	//   - MemoryChanges (unset: the default, as before 1.3.0): memory changes in place, with no
	//     restart (the pod resized, then memcached's limit at runtime), and so does the autopilot's
	//     memory; a server that restarts (a new image, a crash, a failed probe) starts empty.
	//   - Restarts: memcached keeps its items in a file in the pod's memory (`-e`) and saves it on
	//     every stop; a new image is changed in the running pod, one server at a time, each
	//     restarting with its items. The item memory is fixed: a change of memcached.maxMemoryMB
	//     rolls the servers out, each starting empty, and the autopilot adds servers, not memory.
	//     It needs at least 39 MiB of item memory, and memcached marks the file experimental.
	// A pod replaced (a node drained, an eviction, a deletion) starts empty either way, and
	// changing this field rolls the servers out once, each starting empty. Status says which
	// server started empty and why (the CacheWarm condition). With Restarts, a maxMemoryMB below
	// 39 or an autoscaling.maxMemoryMB above maxMemoryMB is refused (Irreconcilable): not at
	// admission, since a rule on the spec of 1.2.0's CRD would stop OLM v1's upgrade.
	// +kubebuilder:validation:Enum=MemoryChanges;Restarts
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Keep the cache across",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:MemoryChanges","urn:alm:descriptor:com.tectonic.ui:select:Restarts"}
	KeepCacheAcross string `json:"keepCacheAcross,omitempty"`

	// tls makes memcached serve TLS on its port, and only TLS, with certificates the operator
	// makes for this cache and renews before they expire: a certificate authority of the cache's
	// own (Secret <servers>-ca), the servers' certificate for their stable names (Secret
	// <servers>-tls) and a client certificate for applications (Secret <servers>-client-tls, a
	// kubernetes.io/tls Secret whose ca.crt is the CA clients verify the servers with). The least
	// TLS version and the ciphers follow the cluster's TLS security profile. Turning it on or off
	// rolls the servers out. See docs/security.md. Off unless enabled. (Added in 1.4.0 without a
	// schema default: an earlier operator's chart refuses values it does not know.)
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="TLS"
	TLS *TLSSpec `json:"tls,omitempty"`

	// persistence keeps a server's items across the replacement of its pod (a node drained, an
	// eviction, a deletion), with keepCacheAcross Restarts: a volume per server (a
	// PersistentVolumeClaim memory-copy-<server>, deleted with its server or the cache) keeps a
	// copy of the memory file memcached saves when its pod stops gracefully, and the server's next
	// pod restores it only when it is complete, made with the same settings and at most
	// maxAgeSeconds old; otherwise it starts empty. The items it brings back missed every write
	// and delete of the time away (docs/upgrades.md). Without keepCacheAcross Restarts it is
	// refused (Irreconcilable). Turning it on or off replaces the StatefulSet, keeping its servers'
	// names, and rolls the servers out once, each starting empty. A volume on a node's own disk
	// pins its server to that node. Off unless enabled. (Added in 1.4.0 without schema defaults:
	// an earlier operator's chart refuses values it does not know.)
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Persistence"
	Persistence *PersistenceSpec `json:"persistence,omitempty"`
}

// PersistenceSpec configures the volumes that keep the servers' memory files across their pods.
type PersistenceSpec struct {
	// enabled gives each server a volume for the copy of its memory file.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Enabled",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	Enabled bool `json:"enabled,omitempty"`

	// size of each server's volume, a Kubernetes quantity (e.g. 2Gi); unset: the item memory
	// and a tenth, and 16Mi (the copy is the item memory and memcached's metadata).
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Size"
	Size string `json:"size,omitempty"`

	// storageClassName is the volumes' StorageClass; unset: the cluster's default.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Storage class",xDescriptors={"urn:alm:descriptor:io.kubernetes:StorageClass"}
	StorageClassName string `json:"storageClassName,omitempty"`

	// maxAgeSeconds is the oldest copy a new pod restores, in seconds (unset: 300). A server away
	// longer missed too many writes and deletes: it starts empty instead. 0 restores none.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Oldest copy restored (seconds)",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number"}
	MaxAgeSeconds *int32 `json:"maxAgeSeconds,omitempty"`
}

// TLSSpec configures memcached's TLS.
type TLSSpec struct {
	// enabled turns TLS on: memcached then refuses plain-text clients.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Enabled",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	Enabled bool `json:"enabled,omitempty"`

	// clientAuth says which clients memcached serves:
	//   - Required (unset: the default): only clients that present a certificate signed by the
	//     cache's CA (mutual TLS), such as the one in Secret <servers>-client-tls; memcached has
	//     no other authentication that its exporter can use.
	//   - None: every client that completes the handshake (the NetworkPolicy still fences them).
	// +kubebuilder:validation:Enum=Required;None
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Client authentication",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Required","urn:alm:descriptor:com.tectonic.ui:select:None"}
	ClientAuth string `json:"clientAuth,omitempty"`

	// certificateSecret names a Secret of the cache's namespace that holds the servers'
	// certificate, in place of the one the operator makes: tls.crt and tls.key, for the DNS
	// names *.<servers>-headless.<namespace>.svc and <servers>-headless.<namespace>.svc, and the
	// CA that signed it in ca.crt, as cert-manager writes a Certificate's Secret. Without ca.crt
	// (OKD's service CA writes none) the CA is the service CA bundle of ConfigMap
	// openshift-service-ca.crt. Whoever writes the Secret renews it: the operator reads it again
	// every minute and makes the servers serve the new certificate without a restart. Client
	// certificates stay the operator's (Secret <servers>-client-tls, whose ca.crt is then this CA).
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Certificate Secret",xDescriptors={"urn:alm:descriptor:io.kubernetes:Secret"}
	CertificateSecret string `json:"certificateSecret,omitempty"`
}

// Values of spec.tls.clientAuth.
const (
	ClientAuthRequired = "Required"
	ClientAuthNone     = "None"
)

// Values of spec.keepCacheAcross.
const (
	KeepAcrossMemoryChanges = "MemoryChanges"
	KeepAcrossRestarts      = "Restarts"
)

// AutoscalingSpec bounds the autopilot and says when it steps. A step up grows each server's
// item memory in place (doubling it, up to maxMemoryMB), then adds a server (up to maxReplicas);
// a step in removes the highest server (down to minReplicas), then halves the memory in place
// (down to memcached.maxMemoryMB). At most one step per coolDown.
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",message="autoscaling.minReplicas cannot be above maxReplicas"
type AutoscalingSpec struct {
	// enabled turns the autopilot on.
	// +kubebuilder:default=false
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// minReplicas is the fewest servers the autopilot scales in to; unset: replicaCount.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// maxReplicas is the most servers the autopilot adds up to; unset: replicaCount (memory
	// only).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`

	// maxMemoryMB is the most item memory per server, in megabytes (memcached -m), that the
	// autopilot grows to; unset: memcached.maxMemoryMB (servers only). The container's memory
	// grows with it, keeping what the spec gives beyond the item memory.
	// +kubebuilder:validation:Minimum=16
	// +kubebuilder:validation:Maximum=65536
	// +optional
	MaxMemoryMB *int32 `json:"maxMemoryMB,omitempty"`

	// scaleUpEvictionsPerSecond: the cache is too small while its servers together evict at
	// least this many items per second.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +kubebuilder:default=1
	// +optional
	ScaleUpEvictionsPerSecond int32 `json:"scaleUpEvictionsPerSecond,omitempty"`

	// scaleUpAfter is how long the evictions must last before a step up (a Go duration: 30s,
	// 2m, 1h).
	// +kubebuilder:validation:Pattern=`^([0-9]{1,5}(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('24h')",message="scaleUpAfter must be between 10s and 24h"
	// +kubebuilder:default="2m"
	// +optional
	ScaleUpAfter string `json:"scaleUpAfter,omitempty"`

	// scaleInBelowPercent: the cache is larger than it needs while no server evicts and the
	// fullest uses less than this share of its item memory.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=90
	// +kubebuilder:default=40
	// +optional
	ScaleInBelowPercent int32 `json:"scaleInBelowPercent,omitempty"`

	// scaleInAfter is how long the low use must last before a step in.
	// +kubebuilder:validation:Pattern=`^([0-9]{1,5}(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('168h')",message="scaleInAfter must be between 10s and 168h"
	// +kubebuilder:default="30m"
	// +optional
	ScaleInAfter string `json:"scaleInAfter,omitempty"`

	// coolDown is the least time between two steps: each step's effect is measured before the
	// next.
	// +kubebuilder:validation:Pattern=`^([0-9]{1,5}(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('24h')",message="coolDown must be between 10s and 24h"
	// +kubebuilder:default="5m"
	// +optional
	CoolDown string `json:"coolDown,omitempty"`
}

// ResourceRequirements are the compute resources of the memcached container: Kubernetes'
// ResourceRequirements for the resources memcached uses. A request may not exceed its limit: one
// rule per resource, with short regular expressions, since API servers before 1.34 estimate a
// quantity's string at the largest request size and refuse costlier rules (1.0.0's one rule for
// all three made the CRD uninstallable there); equal amounts in other units (9m and 0.009) may
// differ in the last bit of a double, hence the tolerance.
// +kubebuilder:validation:XValidation:rule=`!has(self.limits) || !has(self.requests) || !has(self.limits.cpu) || !has(self.requests.cpu) || (type(self.requests.cpu) == int ? double(self.requests.cpu) : string(self.requests.cpu).matches(r'[eE][^i]') ? double(string(self.requests.cpu)) : double(string(self.requests.cpu).find(r'^[+]?[0-9.]*')) * {"": 1.0, 'n': 1e-9, 'u': 1e-6, 'm': 0.001, 'k': 1000.0, 'M': 1000000.0, 'G': 1e9, 'T': 1e12, 'P': 1e15, 'E': 1e18, 'Ki': 1024.0, 'Mi': 1048576.0, 'Gi': 1073741824.0, 'Ti': 1099511627776.0, 'Pi': 1125899906842624.0, 'Ei': 1152921504606846976.0}[string(self.requests.cpu).find(r'[a-zA-Z]*$')]) <= (type(self.limits.cpu) == int ? double(self.limits.cpu) : string(self.limits.cpu).matches(r'[eE][^i]') ? double(string(self.limits.cpu)) : double(string(self.limits.cpu).find(r'^[+]?[0-9.]*')) * {"": 1.0, 'n': 1e-9, 'u': 1e-6, 'm': 0.001, 'k': 1000.0, 'M': 1000000.0, 'G': 1e9, 'T': 1e12, 'P': 1e15, 'E': 1e18, 'Ki': 1024.0, 'Mi': 1048576.0, 'Gi': 1073741824.0, 'Ti': 1099511627776.0, 'Pi': 1125899906842624.0, 'Ei': 1152921504606846976.0}[string(self.limits.cpu).find(r'[a-zA-Z]*$')]) * (1.0 + 1e-15)`,message="resources: the cpu request cannot be above its limit",fieldPath=".requests.cpu"
// +kubebuilder:validation:XValidation:rule=`!has(self.limits) || !has(self.requests) || !has(self.limits.memory) || !has(self.requests.memory) || (type(self.requests.memory) == int ? double(self.requests.memory) : string(self.requests.memory).matches(r'[eE][^i]') ? double(string(self.requests.memory)) : double(string(self.requests.memory).find(r'^[+]?[0-9.]*')) * {"": 1.0, 'n': 1e-9, 'u': 1e-6, 'm': 0.001, 'k': 1000.0, 'M': 1000000.0, 'G': 1e9, 'T': 1e12, 'P': 1e15, 'E': 1e18, 'Ki': 1024.0, 'Mi': 1048576.0, 'Gi': 1073741824.0, 'Ti': 1099511627776.0, 'Pi': 1125899906842624.0, 'Ei': 1152921504606846976.0}[string(self.requests.memory).find(r'[a-zA-Z]*$')]) <= (type(self.limits.memory) == int ? double(self.limits.memory) : string(self.limits.memory).matches(r'[eE][^i]') ? double(string(self.limits.memory)) : double(string(self.limits.memory).find(r'^[+]?[0-9.]*')) * {"": 1.0, 'n': 1e-9, 'u': 1e-6, 'm': 0.001, 'k': 1000.0, 'M': 1000000.0, 'G': 1e9, 'T': 1e12, 'P': 1e15, 'E': 1e18, 'Ki': 1024.0, 'Mi': 1048576.0, 'Gi': 1073741824.0, 'Ti': 1099511627776.0, 'Pi': 1125899906842624.0, 'Ei': 1152921504606846976.0}[string(self.limits.memory).find(r'[a-zA-Z]*$')]) * (1.0 + 1e-15)`,message="resources: the memory request cannot be above its limit",fieldPath=".requests.memory"
// +kubebuilder:validation:XValidation:rule=`!has(self.limits) || !has(self.requests) || !has(self.limits.ephemeral__dash__storage) || !has(self.requests.ephemeral__dash__storage) || (type(self.requests.ephemeral__dash__storage) == int ? double(self.requests.ephemeral__dash__storage) : string(self.requests.ephemeral__dash__storage).matches(r'[eE][^i]') ? double(string(self.requests.ephemeral__dash__storage)) : double(string(self.requests.ephemeral__dash__storage).find(r'^[+]?[0-9.]*')) * {"": 1.0, 'n': 1e-9, 'u': 1e-6, 'm': 0.001, 'k': 1000.0, 'M': 1000000.0, 'G': 1e9, 'T': 1e12, 'P': 1e15, 'E': 1e18, 'Ki': 1024.0, 'Mi': 1048576.0, 'Gi': 1073741824.0, 'Ti': 1099511627776.0, 'Pi': 1125899906842624.0, 'Ei': 1152921504606846976.0}[string(self.requests.ephemeral__dash__storage).find(r'[a-zA-Z]*$')]) <= (type(self.limits.ephemeral__dash__storage) == int ? double(self.limits.ephemeral__dash__storage) : string(self.limits.ephemeral__dash__storage).matches(r'[eE][^i]') ? double(string(self.limits.ephemeral__dash__storage)) : double(string(self.limits.ephemeral__dash__storage).find(r'^[+]?[0-9.]*')) * {"": 1.0, 'n': 1e-9, 'u': 1e-6, 'm': 0.001, 'k': 1000.0, 'M': 1000000.0, 'G': 1e9, 'T': 1e12, 'P': 1e15, 'E': 1e18, 'Ki': 1024.0, 'Mi': 1048576.0, 'Gi': 1073741824.0, 'Ti': 1099511627776.0, 'Pi': 1125899906842624.0, 'Ei': 1152921504606846976.0}[string(self.limits.ephemeral__dash__storage).find(r'[a-zA-Z]*$')]) * (1.0 + 1e-15)`,message="resources: the ephemeral-storage request cannot be above its limit",fieldPath=".requests['ephemeral-storage']"
type ResourceRequirements struct {
	// limits are the most the container may use.
	// +optional
	Limits *ResourceAmounts `json:"limits,omitempty"`
	// requests are what the scheduler reserves for the container.
	// +optional
	Requests *ResourceAmounts `json:"requests,omitempty"`
}

// ResourceAmounts are amounts of cpu, memory and ephemeral storage, as Kubernetes quantities
// (e.g. 500m, 128Mi), none negative.
type ResourceAmounts struct {
	// cpu, in cores (1, 0.5 or 500m).
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^\+?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?[0-9]+))?$`
	// +kubebuilder:validation:XValidation:rule="type(self) != int || self >= 0",message="quantities cannot be negative"
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`
	// memory, in bytes (128Mi, 1Gi).
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^\+?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?[0-9]+))?$`
	// +kubebuilder:validation:XValidation:rule="type(self) != int || self >= 0",message="quantities cannot be negative"
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
	// ephemeralStorage is the container's local disk, in bytes; memcached writes none.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^\+?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?[0-9]+))?$`
	// +kubebuilder:validation:XValidation:rule="type(self) != int || self >= 0",message="quantities cannot be negative"
	// +optional
	EphemeralStorage *resource.Quantity `json:"ephemeral-storage,omitempty"`
}

// Toleration lets the pods run on nodes with a matching taint: Kubernetes' Toleration, checked as
// Kubernetes checks it.
// +kubebuilder:validation:XValidation:rule=`(has(self.key) && self.key != "") || (has(self.operator) && self.operator == 'Exists')`,message="a toleration without key must have operator Exists"
// +kubebuilder:validation:XValidation:rule=`!has(self.operator) || self.operator != 'Exists' || !has(self.value) || self.value == ""`,message="a toleration with operator Exists takes no value"
// +kubebuilder:validation:XValidation:rule=`!has(self.tolerationSeconds) || (has(self.effect) && self.effect == 'NoExecute')`,message="tolerationSeconds needs effect NoExecute"
type Toleration struct {
	// key is the taint key the toleration applies to (a label key); empty with operator Exists
	// matches every taint.
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule=`self == '' || (self.matches(r'^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!self.contains('/') || self.indexOf('/') <= 253))`,message="key must be a label key: an optional DNS subdomain prefix and '/', then at most 63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
	// +optional
	Key string `json:"key,omitempty"`
	// operator is Equal (the default: the taint's value must equal value) or Exists.
	// +kubebuilder:validation:Enum=Exists;Equal;""
	// +optional
	Operator string `json:"operator,omitempty"`
	// value the taint's value must equal (a label value).
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// +optional
	Value string `json:"value,omitempty"`
	// effect of the taints to tolerate: NoSchedule, PreferNoSchedule or NoExecute; empty for all.
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute;""
	// +optional
	Effect string `json:"effect,omitempty"`
	// tolerationSeconds is how long the pods stay on a node tainted NoExecute (default: forever).
	// +optional
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// LabelValue is a Kubernetes label value: at most 63 alphanumerics, '-', '_' or '.', starting and
// ending with an alphanumeric, or empty.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
type LabelValue string

// AnnotationValue is the value of a pod annotation. Its bound keeps the pod's annotations within
// Kubernetes' 256 KiB with podAnnotations' 32 entries.
// +kubebuilder:validation:MaxLength=4096
type AnnotationValue string

// ImageSpec names a container image.
type ImageSpec struct {
	// repository of the image without tag or digest, e.g. docker.io/library/memcached or
	// registry.example.com:5000/mirror/memcached (an OCI repository name).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^(([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[a-fA-F0-9:]+\])(:[0-9]+)?/)?[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$`
	// +optional
	Repository string `json:"repository,omitempty"`

	// tag of the image, e.g. 1.6.38. Ignored when digest is set.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_][A-Za-z0-9_.\-]*$`
	// +optional
	Tag string `json:"tag,omitempty"`

	// digest pins the image by content, e.g. sha256:<64 hex digits>.
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	// +optional
	Digest string `json:"digest,omitempty"`

	// pullPolicy of the image.
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	// +optional
	PullPolicy corev1.PullPolicy `json:"pullPolicy,omitempty"`
}

// MemcachedServer holds memcached's own flags.
// +kubebuilder:validation:XValidation:rule="!has(self.memoryLimitMB) || !has(self.maxMemoryMB) || self.memoryLimitMB == self.maxMemoryMB",message="memoryLimitMB is the old name of maxMemoryMB: set maxMemoryMB only"
// +kubebuilder:validation:XValidation:rule=`!has(self.maxItemSize) || (int(self.maxItemSize.find(r'^[0-9]+')) * (self.maxItemSize.lowerAscii().endsWith('m') ? 1024 : 1)) % 512 == 0`,message="maxItemSize must be a multiple of 512k, memcached's slab chunk size: e.g. 512k, 1m, 1536k or 2m",fieldPath=".maxItemSize"
// +kubebuilder:validation:XValidation:rule=`!has(self.maxItemSize) || (int(self.maxItemSize.find(r'^[0-9]+')) * (self.maxItemSize.lowerAscii().endsWith('m') ? 1024 : 1)) <= 1048576`,message="maxItemSize can be at most 1024m",fieldPath=".maxItemSize"
// +kubebuilder:validation:XValidation:rule=`!has(self.maxItemSize) || (int(self.maxItemSize.find(r'^[0-9]+')) * (self.maxItemSize.lowerAscii().endsWith('m') ? 1024 : 1)) * 2 <= (has(self.memoryLimitMB) ? self.memoryLimitMB : has(self.maxMemoryMB) ? self.maxMemoryMB : 64) * 1024`,message="maxItemSize can be at most half of maxMemoryMB: memcached refuses larger items",fieldPath=".maxItemSize"
type MemcachedServer struct {
	// maxMemoryMB is the item memory in megabytes (memcached -m); 64 when unset. Before 0.2.0 it
	// was named memoryLimitMB. (No schema default: one would clash with CRs that still set the
	// old name; the chart's values.yaml holds the default.)
	// +kubebuilder:validation:Minimum=16
	// +kubebuilder:validation:Maximum=65536
	// +optional
	MaxMemoryMB int32 `json:"maxMemoryMB,omitempty"`

	// memoryLimitMB is the deprecated name of maxMemoryMB (0.1.0). It still works and wins when
	// set; the operator moves its value to maxMemoryMB.
	// +kubebuilder:validation:Minimum=16
	// +kubebuilder:validation:Maximum=65536
	// +optional
	MemoryLimitMB int32 `json:"memoryLimitMB,omitempty"`

	// maxConnections is the maximum number of simultaneous connections (memcached -c).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	// +kubebuilder:default=1024
	// +optional
	MaxConnections int32 `json:"maxConnections,omitempty"`

	// threads is the number of worker threads (memcached -t).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +kubebuilder:default=4
	// +optional
	Threads int32 `json:"threads,omitempty"`

	// maxItemSize is the largest item memcached stores (memcached -I): a number with a k or m
	// suffix, e.g. 512k or 2m; memcached accepts 1k to 1024m.
	// +kubebuilder:validation:Pattern=`^[1-9][0-9]{0,6}[kKmM]$`
	// +kubebuilder:default="1m"
	// +optional
	MaxItemSize string `json:"maxItemSize,omitempty"`

	// extraArgs are further memcached flags, each one argument with its value attached (-R20 or
	// --max-reqs-per-event=20). Only flags that tune memcached are allowed: -v/-vv/-vvv,
	// -C, -M, -F, -X, -W, -R, -f, -n, -b, -B (auto, ascii) and their long names, and -o/--extended
	// with modern, no_modern, no_hashexpand, [no_]slab_reassign, slab_automove, [no_]lru_crawler,
	// [no_]lru_maintainer, idle_timeout, watcher_logbuf_size, track_sizes, no_inline_ascii_resp,
	// [no_]maxconns_fast. Flags the operator sets from the spec (-p, -m, -c, -t, -I), and flags
	// that change where memcached listens or what it may do (-l, -U, -s, -d, -u, -A, -k, -L, -P,
	// -e, -S, TLS), are refused.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=256
	// +kubebuilder:validation:XValidation:rule=`self.all(a, a.matches(r'^(-v{1,3}|--verbose|-C|--disable-cas|-M|--disable-evictions|-F|--disable-flush-all|-X|--disable-dumping|-W|--disable-watch|(-R|--max-reqs-per-event=)[1-9][0-9]{0,5}|(-f|--slab-growth-factor=)(1\.0{0,2}[1-9][0-9]{0,2}|[2-9](\.[0-9]{1,3})?)|(-n|--slab-min-size=)[1-9][0-9]{0,6}|(-b|--listen-backlog=)[0-9]{1,6}|(-B|--protocol=)(auto|ascii)|(-o|--extended=)(modern|no_modern|no_hashexpand|slab_reassign|no_slab_reassign|slab_automove=[0-2]|lru_crawler|no_lru_crawler|lru_maintainer|no_lru_maintainer|idle_timeout=[0-9]{1,9}|watcher_logbuf_size=[0-9]{1,6}|track_sizes|no_inline_ascii_resp|maxconns_fast|no_maxconns_fast)(,(modern|no_modern|no_hashexpand|slab_reassign|no_slab_reassign|slab_automove=[0-2]|lru_crawler|no_lru_crawler|lru_maintainer|no_lru_maintainer|idle_timeout=[0-9]{1,9}|watcher_logbuf_size=[0-9]{1,6}|track_sizes|no_inline_ascii_resp|maxconns_fast|no_maxconns_fast))*)$'))`,message="extraArgs: each argument must be one allowed memcached flag with its value attached (see kubectl explain memcached.spec.memcached.extraArgs); the flags the operator sets (-p, -m, -c, -t, -I) and those that change where memcached listens or what it may do are refused"
	// +optional
	ExtraArgs []string `json:"extraArgs,omitempty"`
}

// PodDisruptionBudgetSpec configures the PodDisruptionBudget of the memcached pods.
type PodDisruptionBudgetSpec struct {
	// enabled creates the PodDisruptionBudget.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// maxUnavailable is the number (0 or more) or percentage (0% to 100%) of pods that may be
	// down during a voluntary disruption such as a drain or a rolling update of the nodes.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule=`type(self) == int ? self >= 0 : self.matches(r'^(100|[1-9]?[0-9])%$')`,message="maxUnavailable must be a number of pods (0 or more) or a percentage from 0% to 100%"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// NetworkPolicySpec configures the NetworkPolicy of the memcached pods.
type NetworkPolicySpec struct {
	// enabled creates the NetworkPolicy.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// allowedClients are further clients of memcached: the pods that a peer's podSelector selects
	// in the namespaces its namespaceSelector selects (the Memcached's namespace when it has none).
	// +kubebuilder:validation:MaxItems=16
	// +optional
	AllowedClients []NetworkPolicyPeer `json:"allowedClients,omitempty"`

	// metricsNamespace is the namespace of the Prometheus that scrapes the exporter. Empty: the
	// platform's, openshift-user-workload-monitoring on OpenShift and monitoring elsewhere.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$`
	// +optional
	MetricsNamespace string `json:"metricsNamespace,omitempty"`
}

// NetworkPolicyPeer selects clients of memcached, as a NetworkPolicy peer does.
// +kubebuilder:validation:XValidation:rule="has(self.namespaceSelector) || has(self.podSelector)",message="a peer needs a namespaceSelector, a podSelector or both"
type NetworkPolicyPeer struct {
	// namespaceSelector selects the clients' namespaces ({} for all).
	// +optional
	NamespaceSelector *LabelSelector `json:"namespaceSelector,omitempty"`
	// podSelector selects the client pods ({} for all in the namespaces).
	// +optional
	PodSelector *LabelSelector `json:"podSelector,omitempty"`
}

// LabelSelector is a Kubernetes label selector, with Kubernetes' rules for its keys and values.
type LabelSelector struct {
	// matchLabels are labels the objects have.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k.matches(r'^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!k.contains('/') || k.indexOf('/') <= 253))`,message="matchLabels keys must be label keys"
	// +optional
	MatchLabels map[string]LabelValue `json:"matchLabels,omitempty"`
	// matchExpressions are requirements on the objects' labels.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is a requirement on a label: In or NotIn a list of values, Exists or
// DoesNotExist.
// +kubebuilder:validation:XValidation:rule="self.operator in ['In', 'NotIn'] ? has(self.values) && size(self.values) > 0 : !has(self.values) || size(self.values) == 0",message="In and NotIn need values; Exists and DoesNotExist take none"
type LabelSelectorRequirement struct {
	// key of the label.
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule=`self.matches(r'^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!self.contains('/') || self.indexOf('/') <= 253)`,message="key must be a label key"
	Key string `json:"key"`
	// operator: In, NotIn, Exists or DoesNotExist.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator string `json:"operator"`
	// values of the label, for In and NotIn.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Values []LabelValue `json:"values,omitempty"`
}

// ServiceSpec configures the memcached Service.
type ServiceSpec struct {
	// port the Service listens on for memcached clients.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=11211
	// +optional
	Port int32 `json:"port,omitempty"`
}

// MetricsSpec configures the Prometheus memcached exporter.
// +kubebuilder:validation:XValidation:rule="!has(self.serviceMonitor) || !has(self.serviceMonitor.enabled) || !self.serviceMonitor.enabled || (has(self.enabled) && self.enabled)",message="metrics.serviceMonitor.enabled needs metrics.enabled: the ServiceMonitor scrapes the exporter"
type MetricsSpec struct {
	// enabled adds the memcached exporter sidecar and a metrics port to the Service.
	// +kubebuilder:default=false
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// image of the exporter. Unset fields take the operator's default (the RELATED_IMAGE_MEMCACHED_EXPORTER
	// image of the operator, else the chart's pinned exporter image).
	// +optional
	Image *ImageSpec `json:"image,omitempty"`

	// port the exporter serves metrics on; not memcached's port 11211, which the pod uses already.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:validation:XValidation:rule="self != 11211",message="metrics.port cannot be 11211: memcached listens there in the same pod"
	// +kubebuilder:default=9150
	// +optional
	Port int32 `json:"port,omitempty"`

	// serviceMonitor creates a Prometheus Operator ServiceMonitor for the exporter.
	// +kubebuilder:default={}
	// +optional
	ServiceMonitor *ServiceMonitorSpec `json:"serviceMonitor,omitempty"`

	// prometheusRule creates a Prometheus Operator PrometheusRule with this memcached's alerts,
	// each with a runbook (docs/runbooks); they read the exporter's metrics as the ServiceMonitor
	// has Prometheus scrape them, so it needs metrics.enabled (the release fails without, saying
	// so). Added after 1.1.0, without a schema default: the chart of an earlier operator, which may
	// still run while OLM upgrades it, refuses values it does not know; values.yaml has the defaults.
	// +optional
	PrometheusRule *PrometheusRuleSpec `json:"prometheusRule,omitempty"`
}

// PrometheusRuleSpec configures the alerts of a memcached (needs the Prometheus Operator's CRDs).
type PrometheusRuleSpec struct {
	// enabled creates the PrometheusRule; requires metrics.enabled.
	// +kubebuilder:default=false
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// for is how long each symptom lasts before its alert fires.
	// +kubebuilder:default={}
	// +optional
	For *AlertDurations `json:"for,omitempty"`

	// runbookURL is where the alerts' runbooks are, one page per alert name (<runbookURL>/<alert>.md).
	// +kubebuilder:validation:Pattern=`^https?://[^\s"{}]+$`
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:default="https://github.com/example/memcached-operator/blob/main/docs/runbooks"
	// +optional
	RunbookURL string `json:"runbookURL,omitempty"`
}

// AlertDurations are Prometheus durations such as 5m or 1h30m.
type AlertDurations struct {
	// down: a pod's memcached does not answer (MemcachedDown), or fewer pods answer than
	// replicaCount asks for (MemcachedUnavailable).
	// +kubebuilder:validation:Pattern=`^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:default="5m"
	// +optional
	Down string `json:"down,omitempty"`
	// evictions: memcached evicts items to store new ones (MemcachedEvictionsSustained).
	// +kubebuilder:validation:Pattern=`^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:default="15m"
	// +optional
	Evictions string `json:"evictions,omitempty"`
	// connections: a pod is near its maxConnections or refuses connections (MemcachedConnectionsNearLimit).
	// +kubebuilder:validation:Pattern=`^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:default="5m"
	// +optional
	Connections string `json:"connections,omitempty"`
	// hitRatio: the hit ratio fell below half of what it was an hour before (MemcachedHitRatioCollapsed).
	// +kubebuilder:validation:Pattern=`^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:default="15m"
	// +optional
	HitRatio string `json:"hitRatio,omitempty"`
}

// ServiceMonitorSpec configures the ServiceMonitor (needs the Prometheus Operator's CRDs).
type ServiceMonitorSpec struct {
	// enabled creates the ServiceMonitor; requires metrics.enabled.
	// +kubebuilder:default=false
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// interval between scrapes, a Prometheus duration such as 30s or 1m30s.
	// +kubebuilder:validation:Pattern=`^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:default="30s"
	// +optional
	Interval string `json:"interval,omitempty"`
}

// MemcachedStatus is written by two writers: the Helm reconciler (helm-operator-plugins) writes
// deployedRelease and the conditions Initialized, Deployed, ReleaseFailed, Irreconcilable and
// Paused; the operator's Go side writes the operand's state: version, the replica counts and the
// conditions Available and Progressing, and memcached's own figures: stats and the conditions
// MemoryPressure and ConnectionsSaturated.
type MemcachedStatus struct {
	// conditions: Initialized, Deployed, ReleaseFailed, Irreconcilable, Paused (the Helm release);
	// Available, Progressing (the memcached pods); MemoryPressure, ConnectionsSaturated (their stats).
	// +listType=map
	// +listMapKey=type
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []HelmCondition `json:"conditions,omitempty"`

	// deployedRelease is the Helm release that runs this memcached.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Deployed release"
	DeployedRelease *HelmRelease `json:"deployedRelease,omitempty"`

	// version is the memcached version that every pod runs (the image tag, or its digest). During
	// a rollout it stays at the version being replaced until every pod runs the new one.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Version"
	Version string `json:"version,omitempty"`

	// replicas is the number of memcached pods, of any version.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Replicas",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	Replicas int32 `json:"replicas,omitempty"`

	// updatedReplicas is the number of pods that run the wanted version and settings.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Updated replicas"
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// readyReplicas is the number of pods that serve.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Ready replicas"
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// servers are the addresses of the memcached servers (host:port), in the order of their
	// ordinals: the list clients shard keys over. Each host is the server's own DNS name, which
	// stays the same when it restarts or is replaced.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Servers"
	Servers []string `json:"servers,omitempty"`

	// readyServers are the servers of servers that are ready.
	// +optional
	ReadyServers []string `json:"readyServers,omitempty"`

	// serversConfigMap names the ConfigMap that holds the server list for applications to mount
	// or take as environment variables: MEMCACHED_SERVERS (comma-separated host:port) and
	// MEMCACHED_SRV (the SRV name of the servers).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Server list ConfigMap",xDescriptors={"urn:alm:descriptor:io.kubernetes:ConfigMap"}
	ServersConfigMap string `json:"serversConfigMap,omitempty"`

	// tls says how clients reach the servers while spec.tls is on: they speak TLS only.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="TLS"
	TLS *TLSStatus `json:"tls,omitempty"`

	// stats are what memcached reports about itself (its `stats` command), read by the operator
	// from each ready pod every --operand-stats-interval; absent while no pod is ready.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Memcached stats"
	Stats *MemcachedStats `json:"stats,omitempty"`

	// autopilot is what the autopilot chose while spec.autoscaling is on: the chart renders its
	// replicas and maxMemoryMB in place of replicaCount and memcached.maxMemoryMB. It is kept
	// here, so an operator restart or upgrade renders the same and moves nothing.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Autopilot"
	Autopilot *AutopilotStatus `json:"autopilot,omitempty"`

	// rollout is how the operator changes the servers: the change in flight or the last one, and
	// each server by its pod's UID, with which started empty and why.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Rollout"
	Rollout *RolloutStatus `json:"rollout,omitempty"`
}

// TLSStatus is what clients of a cache that serves TLS need.
type TLSStatus struct {
	// clientSecret names the kubernetes.io/tls Secret that holds the CA to verify the servers with
	// (ca.crt) and a client certificate (tls.crt, tls.key), which the operator renews: mount it
	// whole (not with subPath) so that renewals reach the application.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Client Secret",xDescriptors={"urn:alm:descriptor:io.kubernetes:Secret"}
	ClientSecret string `json:"clientSecret,omitempty"`

	// serverName is a name every server's certificate holds, for clients that connect by IP
	// address; a client that connects by the names in status.servers verifies those.
	// +optional
	ServerName string `json:"serverName,omitempty"`

	// notAfter is when the certificate the servers serve expires; the operator renews it with a
	// third of its life left.
	// +optional
	NotAfter *metav1.Time `json:"notAfter,omitempty"`
}

// AutopilotStatus is the autopilot's choice and what it is based on.
type AutopilotStatus struct {
	// replicas is the number of servers the autopilot chose.
	Replicas int32 `json:"replicas"`

	// maxMemoryMB is the item memory per server, in megabytes, the autopilot chose.
	MaxMemoryMB int32 `json:"maxMemoryMB"`

	// lastStep says what the autopilot did last, and why.
	// +optional
	LastStep string `json:"lastStep,omitempty"`

	// lastStepTime is when; the next step waits spec.autoscaling.coolDown after it.
	// +optional
	LastStepTime *metav1.Time `json:"lastStepTime,omitempty"`

	// evictingSince is since when the servers have evicted at least
	// spec.autoscaling.scaleUpEvictionsPerSecond, at every read of their stats.
	// +optional
	EvictingSince *metav1.Time `json:"evictingSince,omitempty"`

	// lowUseSince is since when no server has evicted and the fullest has used less than
	// spec.autoscaling.scaleInBelowPercent of its item memory, at every read of their stats.
	// +optional
	LowUseSince *metav1.Time `json:"lowUseSince,omitempty"`
}

// MemcachedStats sums up the `stats` of the ready memcached pods. The conditions MemoryPressure
// and ConnectionsSaturated say when the figures call for a larger cache.
type MemcachedStats struct {
	// pods is the number of ready pods whose stats these are.
	Pods int32 `json:"pods"`

	// hitRatioPercent is the share of gets that found their key, over the last interval that had
	// gets (on a first read: since the pods started).
	// +optional
	HitRatioPercent *int32 `json:"hitRatioPercent,omitempty"`

	// evictionsPerSecond is how many items per second the pods together evicted to make room for
	// new ones, over the last interval; measured from the second read on.
	// +optional
	EvictionsPerSecond *resource.Quantity `json:"evictionsPerSecond,omitempty"`

	// memoryUsed is the item memory in use, summed over the pods, in whole MiB.
	MemoryUsed resource.Quantity `json:"memoryUsed"`

	// memoryLimit is the item memory the pods have together (maxMemoryMB per pod).
	MemoryLimit resource.Quantity `json:"memoryLimit"`

	// memoryUsedPercent is the share of its item memory the fullest pod uses.
	MemoryUsedPercent int32 `json:"memoryUsedPercent"`

	// connections open, summed over the pods (the operator's read is one per pod).
	Connections int32 `json:"connections"`

	// maxConnections the pods accept together (maxConnections per pod).
	MaxConnections int32 `json:"maxConnections"`

	// lastStartTime is when the most recently started memcached process started: its cache is
	// the coldest.
	LastStartTime metav1.Time `json:"lastStartTime"`
}

// HelmCondition is a condition as the Helm reconciler writes it.
type HelmCondition struct {
	// type of the condition.
	Type string `json:"type"`
	// status of the condition: True, False or Unknown.
	Status metav1.ConditionStatus `json:"status"`
	// reason is a CamelCase word for the last transition.
	// +optional
	Reason string `json:"reason,omitempty"`
	// message says what happened in words.
	// +optional
	Message string `json:"message,omitempty"`
	// lastTransitionTime is when the status last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

// HelmRelease names the deployed Helm release. The rendered manifest stays in the release's
// records (Secrets the operator owns), not in status, which every reader of the CR sees: before
// 1.0.0 status held it, and the API server drops it from CRs made then.
type HelmRelease struct {
	// name of the release (the name of the Memcached).
	// +optional
	Name string `json:"name,omitempty"`
	// revision of the release that is deployed.
	// +optional
	Revision int32 `json:"revision,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=memcached-operator
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicaCount`
// +kubebuilder:printcolumn:name="Deployed",type=string,JSONPath=`.status.conditions[?(@.type=="Deployed")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Deployed")].reason`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Hit%",type=integer,JSONPath=`.status.stats.hitRatioPercent`
// +kubebuilder:printcolumn:name="Mem%",type=integer,JSONPath=`.status.stats.memoryUsedPercent`
// +kubebuilder:printcolumn:name="Evictions/s",type=string,JSONPath=`.status.stats.evictionsPerSecond`,priority=1
// +kubebuilder:printcolumn:name="Connections",type=integer,JSONPath=`.status.stats.connections`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Memcached is a memcached cluster, deployed by the operator from the memcached Helm chart.
// +operator-sdk:csv:customresourcedefinitions:displayName="Memcached",resources={{StatefulSet,v1},{Service,v1},{ConfigMap,v1},{PodDisruptionBudget,v1},{ServiceAccount,v1},{Secret,v1}}
type Memcached struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the values of the memcached chart.
	// +optional
	Spec MemcachedSpec `json:"spec,omitempty"`
	// status is written by the operator.
	// +optional
	Status MemcachedStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// MemcachedList is a list of Memcached.
type MemcachedList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Memcached `json:"items"`
}
