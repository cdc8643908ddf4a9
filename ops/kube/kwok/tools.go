//go:build tools

// Package tools pins kwok (fake kubelets for the local API server); see ops/local_kube.py.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
