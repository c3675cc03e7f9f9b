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
type MemcachedSpec struct {
	// replicaCount is the number of memcached pods.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=1
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Replicas",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	ReplicaCount *int32 `json:"replicaCount,omitempty"`

	// image selects the memcached container image. Unset fields take the operator's default
	// (the RELATED_IMAGE_MEMCACHED image of the operator, else the chart's pinned memcached image).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Image"
	Image *ImageSpec `json:"image,omitempty"`

	// memcached holds the memcached server flags.
	// +kubebuilder:default={}
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Memcached server flags"
	Memcached *MemcachedServer `json:"memcached,omitempty"`

	// resources of the memcached container. Unset requests and limits take the chart's defaults.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Resources",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:resourceRequirements"}
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

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

	// metrics configures the Prometheus memcached exporter sidecar and its ServiceMonitor.
	// +kubebuilder:default={}
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Metrics"
	Metrics *MetricsSpec `json:"metrics,omitempty"`

	// nodeSelector constrains the pods to nodes with these labels.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Node selector",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// tolerations of the pods.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Tolerations",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// podAnnotations are added to the pods.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pod annotations",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// podLabels are added to the pods.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pod labels",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	PodLabels map[string]string `json:"podLabels,omitempty"`

	// priorityClassName of the pods.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Priority class",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// ImageSpec names a container image.
type ImageSpec struct {
	// repository of the image, e.g. docker.io/library/memcached.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+([._\-/:][a-z0-9]+)*$`
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

	// extraArgs are further memcached command-line arguments, appended as given.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	ExtraArgs []string `json:"extraArgs,omitempty"`
}

// PodDisruptionBudgetSpec configures the PodDisruptionBudget of the memcached pods.
type PodDisruptionBudgetSpec struct {
	// enabled creates the PodDisruptionBudget.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// maxUnavailable is the number or percentage of pods that may be down during a voluntary
	// disruption such as a drain or a rolling update of the nodes.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
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

	// image of the exporter; unset fields take the chart's pinned exporter image.
	// +optional
	Image *ImageSpec `json:"image,omitempty"`

	// port the exporter serves metrics on.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=9150
	// +optional
	Port int32 `json:"port,omitempty"`

	// serviceMonitor creates a Prometheus Operator ServiceMonitor for the exporter.
	// +kubebuilder:default={}
	// +optional
	ServiceMonitor *ServiceMonitorSpec `json:"serviceMonitor,omitempty"`
}

// ServiceMonitorSpec configures the ServiceMonitor (needs the Prometheus Operator's CRDs).
type ServiceMonitorSpec struct {
	// enabled creates the ServiceMonitor; requires metrics.enabled.
	// +kubebuilder:default=false
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// interval between scrapes, e.g. 30s.
	// +kubebuilder:validation:Pattern=`^[0-9]+(ms|s|m|h)$`
	// +kubebuilder:default="30s"
	// +optional
	Interval string `json:"interval,omitempty"`
}

// MemcachedStatus is written by two writers: the Helm reconciler (helm-operator-plugins) writes
// deployedRelease and the conditions Initialized, Deployed, ReleaseFailed, Irreconcilable and
// Paused; the operator's Go side writes the operand's state: version, the replica counts and the
// conditions Available and Progressing.
type MemcachedStatus struct {
	// conditions: Initialized, Deployed, ReleaseFailed, Irreconcilable, Paused (the Helm release);
	// Available, Progressing (the memcached pods).
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

// HelmRelease names the deployed Helm release.
type HelmRelease struct {
	// name of the release (the name of the Memcached).
	// +optional
	Name string `json:"name,omitempty"`
	// manifest is the rendered chart of the release.
	// +optional
	Manifest string `json:"manifest,omitempty"`
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
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Memcached is a memcached cluster, deployed by the operator from the memcached Helm chart.
// +operator-sdk:csv:customresourcedefinitions:displayName="Memcached",resources={{Deployment,v1},{Service,v1},{PodDisruptionBudget,v1},{ServiceAccount,v1},{Secret,v1}}
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

func init() {
	SchemeBuilder.Register(&Memcached{}, &MemcachedList{})
}
