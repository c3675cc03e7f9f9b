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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MemcachedBackupSpec is the desired state of a MemcachedBackup.
type MemcachedBackupSpec struct {
	// size is the number of memcached pods of the backup.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Size",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	Size int32 `json:"size"`

	// imagePullSecrets are Secrets in this namespace that the pods pull their images with, e.g.
	// from a private mirror (see LocalSecretReference).
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Image pull secrets",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	ImagePullSecrets []LocalSecretReference `json:"imagePullSecrets,omitempty"`
}

// LocalSecretReference names a Secret in the namespace of the CR that refers to it. The operator
// never reads it: the kubelet does, for the pods of that namespace only.
type LocalSecretReference struct {
	// name of the Secret (a DNS subdomain).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	Name string `json:"name"`
}

// MemcachedBackupStatus is the observed state of a MemcachedBackup.
type MemcachedBackupStatus struct {
	// nodes are the names of the memcached pods, sorted.
	// +listType=set
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Nodes",xDescriptors={"urn:alm:descriptor:text"}
	Nodes []string `json:"nodes,omitempty"`

	// readyReplicas is the number of ready memcached pods.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Ready replicas",xDescriptors={"urn:alm:descriptor:text"}
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// conditions: Available, Progressing, Degraded.
	// +listType=map
	// +listMapKey=type
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation of the spec this status describes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed generation",xDescriptors={"urn:alm:descriptor:text"}
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=memcached-operator
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// MemcachedBackup runs a Deployment of memcached pods, reconciled in Go.
// +operator-sdk:csv:customresourcedefinitions:displayName="Memcached Backup",resources={{Deployment,v1},{Pod,v1}}
type MemcachedBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +required
	Spec MemcachedBackupSpec `json:"spec"`
	// status is written by the operator.
	// +optional
	Status MemcachedBackupStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// MemcachedBackupList is a list of MemcachedBackup.
type MemcachedBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MemcachedBackup `json:"items"`
}
