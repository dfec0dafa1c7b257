//go:build tools

// Package tools pins the command built from this module and the API packages e2e/gen-gitops-crds generates
// CRDs from; it is never compiled.
package tools

import (
	_ "github.com/fluxcd/kustomize-controller"
	_ "github.com/fluxcd/kustomize-controller/api/v1"
)
