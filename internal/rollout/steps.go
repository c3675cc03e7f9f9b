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

package rollout

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
)

// What a running server still needs to run a template, in the fields a change in place changes.

// Metadata is the labels and annotations pod p must have to run the template to, made from (or
// last changed to) the template from: those from had and to has not go, the others take to's
// values; what others wrote on the pod (the StatefulSet controller's labels) stays. changed says
// whether they differ from p's.
func Metadata(p *corev1.Pod, from, to *corev1.PodTemplateSpec) (podLabels, podAnnotations map[string]string, changed bool) {
	podLabels = movedMap(p.Labels, from.Labels, to.Labels)
	podAnnotations = movedMap(p.Annotations, from.Annotations, to.Annotations)
	return podLabels, podAnnotations, !maps.Equal(podLabels, p.Labels) || !maps.Equal(podAnnotations, p.Annotations)
}

// movedMap is have with the keys of was that will lacks removed and the entries of will set.
func movedMap(have, was, will map[string]string) map[string]string {
	out := maps.Clone(have)
	if out == nil {
		out = map[string]string{}
	}
	for k := range was {
		if _, ok := will[k]; !ok {
			delete(out, k)
		}
	}
	maps.Copy(out, will)
	return out
}

// ImagesToChange are the containers of pod p whose image is not the one of the template to
// (container → image).
func ImagesToChange(p *corev1.Pod, to *corev1.PodTemplateSpec) map[string]string {
	out := map[string]string{}
	for _, want := range to.Spec.Containers {
		if c := ContainerNamed(&p.Spec, want.Name); c != nil && c.Image != want.Image {
			out[want.Name] = want.Image
		}
	}
	return out
}
