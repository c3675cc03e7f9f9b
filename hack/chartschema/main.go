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

// Command chartschema writes the memcached chart's values.schema.json from the Memcached CRD.
//
//	go run ./hack/chartschema -crd config/crd/bases/cache.my.domain_memcacheds.yaml -out helm-charts/memcached/values.schema.json
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/example/memcached-operator/internal/chartschema"
)

func main() {
	crdPath := flag.String("crd", "config/crd/bases/cache.my.domain_memcacheds.yaml", "the Memcached CRD")
	version := flag.String("version", "v1", "the CRD version whose spec schema to use")
	out := flag.String("out", "helm-charts/memcached/values.schema.json", "where to write the chart's values schema")
	flag.Parse()

	if err := run(*crdPath, *version, *out); err != nil {
		fmt.Fprintln(os.Stderr, "chartschema:", err)
		os.Exit(1)
	}
}

func run(crdPath, version, out string) error {
	crd, err := os.ReadFile(crdPath)
	if err != nil {
		return err
	}
	spec, err := chartschema.SpecSchema(crd, version)
	if err != nil {
		return err
	}
	doc, err := chartschema.ValuesSchema(spec, "Values of the memcached chart (the spec of a cache.my.domain/"+version+" Memcached)")
	if err != nil {
		return err
	}
	return os.WriteFile(out, doc, 0o644)
}
