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

// Package chartschema derives the memcached chart's values.schema.json from the Memcached CRD, so
// that the Go API types (api/v1) stay the one source of truth for both: what the API server
// refuses at admission, Helm refuses at install, with the same rules and descriptions.
package chartschema

import (
	"encoding/json"
	"fmt"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// OperatorValues are the values the operator adds to a CR's spec before it renders the chart.
// They are not part of the CRD (users do not set them on a Memcached) but the chart accepts them.
var OperatorValues = map[string]any{
	"operatorNamespace": map[string]any{
		"type":        "string",
		"description": "the namespace of the operator, whose pods the NetworkPolicy lets reach memcached; the operator sets it.",
		"maxLength":   63,
		"pattern":     `^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$`,
	},
	"tlsProfile": map[string]any{
		"type":                 "object",
		"description":          "the cluster's TLS security profile as memcached takes it (tls.enabled); the operator sets it.",
		"additionalProperties": false,
		"properties": map[string]any{
			"minVersion": map[string]any{"type": "integer", "minimum": 2, "maximum": 3,
				"description": "memcached's ssl_min_version: 2 for TLS 1.2, 3 for TLS 1.3."},
			"ciphers": map[string]any{"type": "string", "maxLength": 4096, "pattern": `^[A-Za-z0-9_+-]*(:[A-Za-z0-9_+-]+)*$`,
				"description": "memcached's ssl_ciphers: the TLS 1.2 ciphers, OpenSSL names separated by ':'."},
		},
	},
}

// SpecSchema returns the OpenAPI schema of spec in the served version of a CRD.
func SpecSchema(crdYAML []byte, version string) (*apiextensionsv1.JSONSchemaProps, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(crdYAML, &crd); err != nil {
		return nil, fmt.Errorf("parse CRD: %w", err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != version {
			continue
		}
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return nil, fmt.Errorf("CRD %s version %s has no schema", crd.Name, version)
		}
		spec, ok := v.Schema.OpenAPIV3Schema.Properties["spec"]
		if !ok {
			return nil, fmt.Errorf("CRD %s version %s has no spec schema", crd.Name, version)
		}
		return &spec, nil
	}
	return nil, fmt.Errorf("CRD %s has no version %s", crd.Name, version)
}

// ValuesSchema converts a CRD spec schema into a JSON Schema (draft 7) document for Helm.
func ValuesSchema(spec *apiextensionsv1.JSONSchemaProps, title string) ([]byte, error) {
	root := convert(spec)
	root["$schema"] = "http://json-schema.org/draft-07/schema#"
	root["title"] = title
	props := root["properties"].(map[string]any)
	for k, v := range OperatorValues {
		if _, clash := props[k]; clash {
			return nil, fmt.Errorf("operator value %q clashes with a CRD field", k)
		}
		props[k] = v
	}
	out, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// convert keeps the JSON Schema keywords of a CRD schema and drops the Kubernetes extensions.
// Objects with declared properties get additionalProperties: false, because the API server prunes
// (or with strict field validation refuses) unknown fields while JSON Schema allows them.
func convert(s *apiextensionsv1.JSONSchemaProps) map[string]any {
	out := map[string]any{}
	if s.Description != "" {
		out["description"] = s.Description
	}
	if s.Type != "" {
		out["type"] = s.Type
	}
	if s.XIntOrString {
		// controller-gen emits anyOf: [integer, string] beside the extension; make sure of it.
		out["anyOf"] = []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}
	}
	for _, a := range s.AnyOf {
		if !s.XIntOrString {
			out["anyOf"] = append(asSlice(out["anyOf"]), convert(&a))
		}
	}
	for _, a := range s.AllOf {
		out["allOf"] = append(asSlice(out["allOf"]), convert(&a))
	}
	if s.Pattern != "" {
		out["pattern"] = s.Pattern
	}
	if len(s.Enum) > 0 {
		var enum []any
		for _, e := range s.Enum {
			var v any
			if err := json.Unmarshal(e.Raw, &v); err == nil {
				enum = append(enum, v)
			}
		}
		out["enum"] = enum
	}
	if s.Default != nil {
		var v any
		if err := json.Unmarshal(s.Default.Raw, &v); err == nil {
			out["default"] = v
		}
	}
	setNum(out, "minimum", s.Minimum)
	setNum(out, "maximum", s.Maximum)
	setInt(out, "minLength", s.MinLength)
	setInt(out, "maxLength", s.MaxLength)
	setInt(out, "minItems", s.MinItems)
	setInt(out, "maxItems", s.MaxItems)
	setInt(out, "minProperties", s.MinProperties)
	setInt(out, "maxProperties", s.MaxProperties)
	if len(s.Required) > 0 {
		req := append([]string(nil), s.Required...)
		sort.Strings(req)
		out["required"] = req
	}
	if s.Items != nil && s.Items.Schema != nil {
		out["items"] = convert(s.Items.Schema)
	}
	if len(s.Properties) > 0 {
		props := map[string]any{}
		for name, p := range s.Properties {
			props[name] = convert(&p)
		}
		out["properties"] = props
		out["additionalProperties"] = false
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		out["additionalProperties"] = convert(s.AdditionalProperties.Schema)
	}
	return out
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func setNum(out map[string]any, key string, v *float64) {
	if v != nil {
		out[key] = *v
	}
}

func setInt(out map[string]any, key string, v *int64) {
	if v != nil {
		out[key] = *v
	}
}
