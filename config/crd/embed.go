// Package crd embeds the CustomResourceDefinitions of the kinds solar reads
// and writes in an API server: Target (with status conditions) and
// TargetReport. They are consistent with the CUE schemas in schemas/.
package crd

import "embed"

// FS holds one CRD per file.
//
//go:embed *.yaml
var FS embed.FS
