//go:build tools

// Package tools pins the command built from this module; it is never compiled.
package tools

import _ "sigs.k8s.io/jobset"
