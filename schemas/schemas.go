// Package schemas embeds the CUE schemas of the SolAr kinds (the *.cue files of
// this directory, a CUE module users can also vet against with the cue CLI).
package schemas

import "embed"

// FS holds the schema files, *.cue at its root.
//
//go:embed *.cue
var FS embed.FS
