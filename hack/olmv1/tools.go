//go:build tools

// Package tools pins OLM v1: make olmv1-binaries builds operator-controller and catalogd from it.
package tools

import (
	_ "github.com/operator-framework/operator-controller/cmd/catalogd"
	_ "github.com/operator-framework/operator-controller/cmd/operator-controller"
)
