//go:build tools

// Package tools pins the command built from this module and the API packages e2e/gen-gitops-crds generates
// CRDs from; it is never compiled.
package tools

import (
	_ "github.com/fluxcd/source-controller"
	_ "github.com/fluxcd/source-controller/api/v1"
)
