// Package crd embeds the CustomResourceDefinitions of every SolAr kind, one
// per file, generated from the CUE schemas in schemas/ by internal/crdgen
// (make crds): kubectl apply -f config/crd/.
package crd

import "embed"

// FS holds one CRD per file.
//
//go:embed *.yaml
var FS embed.FS
