//go:build tools

// Package tools pins the command built from this module; it is never compiled.
package tools

import _ "github.com/kubeflow/spark-operator/v2/cmd/operator"
