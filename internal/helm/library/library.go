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

// Package library holds the names that helm-operator-plugins and Helm use but do not export,
// copied here: the one place to check when either is upgraded. (The operator's own labels are in
// internal/labels.)
package library

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// Finalizer is the finalizer the library's reconciler puts on each CR it has taken on
	// (pkg/reconciler, uninstallFinalizer).
	Finalizer = "uninstall-helm-release"

	// The labels of Helm's release records (helm.sh/helm/v3/pkg/storage/driver, Secrets driver):
	// RecordOwner is "helm" on every record, RecordName the release's name, RecordStatus its state.
	RecordOwnerLabel  = "owner"
	RecordOwner       = "helm"
	RecordNameLabel   = "name"
	RecordStatusLabel = "status"

	// ReleaseNameAnnotation and ReleaseNamespaceAnnotation name the release that made an object
	// (Helm's pkg/action, on every object it creates).
	ReleaseNameAnnotation      = "meta.helm.sh/release-name"
	ReleaseNamespaceAnnotation = "meta.helm.sh/release-namespace"

	// ConditionDeployed is the condition the library sets True once a release is installed or
	// upgraded (pkg/reconciler/internal/conditions, TypeDeployed).
	ConditionDeployed = "Deployed"
	// ConditionInitialized and ConditionPaused are the library's other conditions: a CR it has
	// seen (TypeInitialized), a CR whose reconcile is paused (TypePaused).
	ConditionInitialized = "Initialized"
	ConditionPaused      = "Paused"
	// ConditionReleaseFailed is True while the last install, upgrade or uninstall failed
	// (TypeReleaseFailed); ConditionIrreconcilable while the library cannot reconcile the CR at
	// all (TypeIrreconcilable).
	ConditionReleaseFailed  = "ReleaseFailed"
	ConditionIrreconcilable = "Irreconcilable"
)

// ControllerName is the library's name for the controller of a kind (its SetupWithManager), which
// its metrics and Events carry.
func ControllerName(gvk schema.GroupVersionKind) string {
	return strings.ToLower(gvk.Kind) + "-controller"
}
