package main

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/credential"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// TestStreamedReportJSONIsTheDocument: the report streamed a Target at a
// time is the document json.Encoder writes, to the byte: no Targets (nil
// and empty), one, several with everything a Target's report holds, and
// the fields after the Targets (orphans, problems, the error, a dry run,
// rollouts), with characters JSON escapes.
func TestStreamedReportJSONIsTheDocument(t *testing.T) {
	shared := &publish.Result{Repository: "ns/release-web", Version: "0.0.3", Digest: "sha256:01", Action: publish.Unchanged}
	full := pipeline.TargetReport{Namespace: "ns", Name: "edge-<1>&",
		Result:     publish.Result{Repository: "ns/bootstrap-edge-1", Version: "0.0.2", Digest: "sha256:02", Action: "updated", Signature: "sha256:03"},
		Releases:   []pipeline.ReleaseReport{{Key: "web", Release: "web", DependsOn: []string{"db"}, Result: shared}, {Key: "db", Release: "dä\tb"}},
		Excluded:   []pipeline.ExcludedReport{{Release: "old", Reason: "lost to \"web\" (priority 2)"}},
		Credential: &credential.Credential{Status: "False", Reason: "MintFailed", Message: "refused\nagain"},
		Rollout:    &pipeline.RolloutMember{Rollout: "r", Wave: "canary", State: "held"}}
	bare := pipeline.TargetReport{Namespace: "ns", Name: "b", Releases: []pipeline.ReleaseReport{}, Excluded: []pipeline.ExcludedReport{}}
	after := pipeline.Report{
		Orphans:  []pipeline.Orphan{{Namespace: "ns", Name: "gone", Pruned: shared}},
		Problems: diag.List{{File: "a.yaml", Line: 3, Path: "spec.x", Message: "not <allowed>", Severity: diag.Error}},
		Error:    "registry r: denied", DryRun: true,
		Rollouts: []pipeline.RolloutReport{{Namespace: "ns", Name: "r", Revision: "sha256:04"}},
	}
	cases := map[string]pipeline.Report{
		"no Targets (nil)": {},
		"no Targets":       {Targets: []pipeline.TargetReport{}},
		"one":              {Targets: []pipeline.TargetReport{bare}},
		"several":          {Targets: []pipeline.TargetReport{full, bare, full}},
	}
	for _, targets := range [][]pipeline.TargetReport{nil, {}, {full, bare}} {
		r := after
		r.Targets = targets
		cases[fmt.Sprintf("%d Targets and the rest", len(targets))] = r
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			var want, got bytes.Buffer
			require.NoError(t, writeJSON(&want, &r))
			require.NoError(t, streamReportJSON(&got, &r))
			assert.Equal(t, want.String(), got.String())
		})
	}
}

// BenchmarkPrintReport: the report of 100,000 Targets (100 a namespace, 5
// releases each, shared by a namespace's Targets) printed as each -o
// prints it. B/op is what printing adds to a run's peak.
func BenchmarkPrintReport(b *testing.B) {
	r := &pipeline.Report{}
	var releases []pipeline.ReleaseReport
	for i := range 100000 {
		ns := fmt.Sprintf("ns-%d", i/100)
		if i%100 == 0 {
			releases = nil
			for k := range 5 {
				res := &publish.Result{Repository: fmt.Sprintf("%s/release-%d", ns, k), Version: "0.0.1", Digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Action: publish.Unchanged}
				releases = append(releases, pipeline.ReleaseReport{Key: fmt.Sprint(k), Release: fmt.Sprint(k), Result: res})
			}
		}
		r.Targets = append(r.Targets, pipeline.TargetReport{Namespace: ns, Name: fmt.Sprintf("edge-%d", i),
			Result:   publish.Result{Repository: fmt.Sprintf("%s/bootstrap-edge-%d", ns, i), Version: "0.0.1", Digest: "sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210", Action: publish.Unchanged},
			Releases: releases, Excluded: []pipeline.ExcludedReport{}})
	}
	for _, output := range []string{"text", "json", "name"} {
		b.Run(output, func(b *testing.B) {
			b.ReportAllocs()
			g := &globals{stdout: io.Discard, stderr: io.Discard, output: output}
			for b.Loop() {
				require.NoError(b, g.printReport(r, chartsTable))
			}
		})
	}
}
