//go:build tools

// Package tools pins the NetworkPolicy agent the local cluster runs (make cluster-binaries).
package tools

import _ "sigs.k8s.io/kube-network-policies/cmd/kube-network-policies/standard"
