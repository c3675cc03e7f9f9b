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

package managercache

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/internal/labels"
)

// The cache keeps the operator's objects whole (without managedFields) and others' as their
// identity and labels.
func TestSkeletonOfOthers(t *testing.T) {
	meta := func(name string, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: "7", Generation: 2,
			Labels: labels, Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Thing", Name: "owner", UID: "o"}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}
	}
	deployment := func(name string, labels map[string]string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: meta(name, labels), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "theirs:1"}}}}},
			Status: appsv1.DeploymentStatus{ReadyReplicas: 3}}
	}
	serviceMonitor := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
		"metadata": map[string]any{"name": "theirs", "namespace": "ns", "annotations": map[string]any{"a": "b"}},
		"spec":     map[string]any{"endpoints": []any{map[string]any{"port": "metrics"}}},
	}}
	for _, tc := range []struct {
		name  string
		in    client.Object
		whole bool
	}{
		{"the chart's Deployment", deployment("m-memcached", map[string]string{"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "m"}), true},
		{"a MemcachedBackup's Deployment", deployment("b", map[string]string{"app.kubernetes.io/name": labels.BackupName}), true},
		{"a Deployment of another part of the operator", deployment("p", map[string]string{"app.kubernetes.io/part-of": "memcached-operator"}), true},
		{"a Memcached", &cachev1.Memcached{ObjectMeta: meta("m", nil), Spec: cachev1.MemcachedSpec{ReplicaCount: ptr.To[int32](1)}}, true},
		{"a MemcachedBackup's Deployment whose labels someone removed", func() client.Object {
			d := deployment("b2", nil)
			d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "cache.my.domain/v1", Kind: "MemcachedBackup", Name: "b2", UID: "b", Controller: ptr.To(true)}}
			return d
		}(), true},
		{"someone else's Deployment", deployment("web", map[string]string{"app": "web"}), false},
		{"a Deployment of someone else's Helm release", func() client.Object {
			d := deployment("their-release", map[string]string{"app": "theirs"})
			d.Annotations["meta.helm.sh/release-name"], d.Annotations["meta.helm.sh/release-namespace"] = "theirs", "ns"
			return d
		}(), false},
		{"someone else's ServiceMonitor", serviceMonitor, false},
		{"a namespace's ResourceQuota, which bounds the autopilot", &corev1.ResourceQuota{ObjectMeta: meta("quota", nil),
			Spec:   corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceLimitsMemory: resource.MustParse("1Gi")}},
			Status: corev1.ResourceQuotaStatus{Used: corev1.ResourceList{corev1.ResourceLimitsMemory: resource.MustParse("512Mi")}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.in.DeepCopyObject().(client.Object)
			out, err := skeletonOfOthers(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got := out.(client.Object)
			if got.GetManagedFields() != nil {
				t.Error("managedFields are kept")
			}
			if tc.whole {
				want.SetManagedFields(nil)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("not kept whole:\n%#v", got)
				}
				return
			}
			if got.GetName() != want.GetName() || got.GetNamespace() != want.GetNamespace() || got.GetUID() != want.GetUID() ||
				got.GetResourceVersion() != want.GetResourceVersion() || got.GetGeneration() != want.GetGeneration() ||
				!reflect.DeepEqual(got.GetLabels(), want.GetLabels()) || !reflect.DeepEqual(got.GetOwnerReferences(), want.GetOwnerReferences()) {
				t.Errorf("the skeleton lost the identity: %#v", got)
			}
			wantAnnotations := map[string]string(nil)
			if release := want.GetAnnotations()["meta.helm.sh/release-name"]; release != "" {
				wantAnnotations = map[string]string{"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": "ns"}
			}
			if !reflect.DeepEqual(got.GetAnnotations(), wantAnnotations) {
				t.Errorf("the skeleton's annotations are %v, want %v (which Helm release made it, no more)", got.GetAnnotations(), wantAnnotations)
			}
			switch s := got.(type) {
			case *appsv1.Deployment:
				if !reflect.DeepEqual(s.Spec, appsv1.DeploymentSpec{}) || !reflect.DeepEqual(s.Status, appsv1.DeploymentStatus{}) {
					t.Errorf("the skeleton keeps spec or status: %+v", s)
				}
			case *unstructured.Unstructured:
				if s.GroupVersionKind() != serviceMonitor.GroupVersionKind() || s.Object["spec"] != nil {
					t.Errorf("the skeleton is %#v", s.Object)
				}
			default:
				t.Errorf("the skeleton is a %T", got)
			}
		})
	}
}

// The cache keeps a memcached pod's metadata, status, hostNetwork and the memcached container's
// arguments and resources; the rest of its spec is its StatefulSet's template.
func TestPodsCachedWithoutSpec(t *testing.T) {
	var transform func(any) (any, error)
	for obj, by := range Options(nil, nil).ByObject {
		if _, ok := obj.(*corev1.Pod); ok {
			transform = by.Transform
		}
	}
	if transform == nil {
		t.Fatal("Options has no transform of pods")
	}
	status := corev1.PodStatus{PodIP: "10.0.0.7", Phase: corev1.PodRunning,
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "memcached", RestartCount: 2}}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "mc-0", Namespace: "ns", Labels: map[string]string{"app": "x"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.PodSpec{HostNetwork: true, NodeName: "node-1", Containers: []corev1.Container{
			{Name: "memcached", Image: "memcached:1.6", Args: []string{"-m", "64"}, Ports: []corev1.ContainerPort{{ContainerPort: 11211}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("96Mi")}}},
			{Name: "exporter", Image: "memcached-exporter:v0.15", Args: []string{"--memcached.address=localhost:11211"}}}},
		Status: *status.DeepCopy(),
	}
	out, err := transform(pod)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod)
	want := corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "memcached", Args: []string{"-m", "64"},
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("96Mi")}}}}}
	if !reflect.DeepEqual(got.Spec, want) || !reflect.DeepEqual(got.Status, status) ||
		got.Labels["app"] != "x" || got.ManagedFields != nil {
		t.Errorf("cached pod = spec %+v, status %+v, labels %v, managedFields %v", got.Spec, got.Status, got.Labels, got.ManagedFields)
	}
}
