//go:build tools

// Package tools pins the API package e2e/gen-gitops-crds generates Argo CD's Application CRD from; it is never
// compiled.
package tools

import _ "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
