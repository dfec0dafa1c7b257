//go:build tools

// Package tools pins what is used of Argo CD: the API package e2e/gen-gitops-crds generates Argo CD's CRDs from,
// and the multicall command (cmd) e2e/build-binaries --argocd builds as argocd (its basename selects the
// component: argocd-application-controller, argocd-repo-server, argocd-cmp-server). Never compiled itself.
package tools

import (
	_ "github.com/argoproj/argo-cd/v3/cmd"
	_ "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
)
