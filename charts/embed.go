// Package charts embeds the Helm chart templates solar renders: release/ (one
// Release: a Flux OCIRepository and HelmRelease), bootstrap/ (one Target: an
// OCIRepository and HelmRelease per release chart) and common/ (helpers both
// get). Chart.yaml and values.yaml are written by renderer/chart; the templates
// only ever read .Values, so user values stay data.
package charts

import "embed"

// FS holds release/, bootstrap/ and common/.
//
//go:embed all:release all:bootstrap all:common
var FS embed.FS
