//go:build tools

// Package tools pins the exporter's module: see go.mod.
package tools

import _ "github.com/prometheus/memcached_exporter/cmd/memcached_exporter"
