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

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/yaml"
)

// Bad input is refused at admission by the CRD schema, with a message that names the field. The
// test client validates fields strictly, as kubectl does by default.
var _ = Describe("Admission of bad input", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace(context.Background()) })

	DescribeTable("refuses",
		func(kind, spec, wantMessage string) {
			obj := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal([]byte("apiVersion: cache.my.domain/v1\nkind: "+kind+"\nmetadata: {name: bad}\nspec:\n"+spec), &obj.Object)).To(Succeed())
			obj.SetNamespace(ns)
			err := k8sClient.Create(context.Background(), obj)
			Expect(err).To(HaveOccurred(), "a %s with spec %q must be refused", kind, spec)
			Expect(err.Error()).To(ContainSubstring(wantMessage))
		},
		Entry("a Memcached with a string replicaCount", "Memcached", "  replicaCount: three",
			`spec.replicaCount: Invalid value: "string": spec.replicaCount in body must be of type integer`),
		Entry("a Memcached with a negative replicaCount", "Memcached", "  replicaCount: -1",
			"spec.replicaCount: Invalid value: -1: spec.replicaCount in body should be greater than or equal to 0"),
		Entry("a Memcached with too many replicas", "Memcached", "  replicaCount: 1000",
			"spec.replicaCount in body should be less than or equal to 100"),
		Entry("a Memcached with zero threads", "Memcached", "  memcached: {threads: 0}",
			"spec.memcached.threads in body should be greater than or equal to 1"),
		Entry("a Memcached with too little memory", "Memcached", "  memcached: {maxMemoryMB: 8}",
			"spec.memcached.maxMemoryMB in body should be greater than or equal to 16"),
		Entry("a Memcached with too little memory under the 0.1.0 name", "Memcached", "  memcached: {memoryLimitMB: 8}",
			"spec.memcached.memoryLimitMB in body should be greater than or equal to 16"),
		Entry("a Memcached with both names of the memory, disagreeing", "Memcached", "  memcached: {memoryLimitMB: 128, maxMemoryMB: 256}",
			"memoryLimitMB is the old name of maxMemoryMB: set maxMemoryMB only"),
		Entry("a Memcached with a malformed item size", "Memcached", "  memcached: {maxItemSize: big}",
			"spec.memcached.maxItemSize in body should match"),
		Entry("a Memcached with an unknown anti-affinity", "Memcached", "  antiAffinity: maybe",
			`spec.antiAffinity: Unsupported value: "maybe": supported values: "soft", "hard", "none"`),
		Entry("a Memcached with a port out of range", "Memcached", "  service: {port: 70000}",
			"spec.service.port in body should be less than or equal to 65535"),
		Entry("a Memcached with a malformed digest", "Memcached", "  image: {digest: 'md5:abc'}",
			"spec.image.digest in body should match"),
		Entry("a Memcached with a ServiceMonitor but no exporter", "Memcached", "  metrics: {serviceMonitor: {enabled: true}}",
			"metrics.serviceMonitor.enabled needs metrics.enabled"),
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
