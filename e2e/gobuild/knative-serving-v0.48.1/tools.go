//go:build tools

// Package tools pins the commands built from this module; it is never compiled.
package tools

import (
	_ "knative.dev/serving/cmd/activator"
	_ "knative.dev/serving/cmd/autoscaler"
	_ "knative.dev/serving/cmd/controller"
	_ "knative.dev/serving/cmd/webhook"
)
