package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/credential"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

// TestStreamTableIsNewTable: a table streamed in two passes reads as
// newTable's: the same columns, to the byte, for wide and multi-byte
// cells, empty ones, rows written in pieces and one write of many rows.
func TestStreamTableIsNewTable(t *testing.T) {
	write := func(w io.Writer) {
		fmt.Fprintf(w, "TARGET\tCHART\tVERSION\tDIGEST\tACTION\n")
		fmt.Fprintf(w, "alpha/edge-1\t-\t0.0.1\tsha256:0123456\tcreated\n")
		fmt.Fprintf(w, "  web\tälpha/release-wëb\t0.0.12\t\tunchanged (rollout r, wave w: held)\n")
		fmt.Fprint(w, "  excluded\tbeta/a-much-longer-release-name")
		fmt.Fprint(w, "\t-\t-\tlost to another release\n")
		io.WriteString(w, "x\ty\tz\t\t\nlast\t\t\t\tend\n")
	}
	var want bytes.Buffer
	tw := newTable(&want)
	write(tw)
	require.NoError(t, tw.Flush())

	var got bytes.Buffer
	streamTable(&got, write)
	assert.Equal(t, want.String(), got.String())
	assert.Equal(t, 6, strings.Count(got.String(), "\n"))
}

// TestReportTableKeepsAMessageOnItsLine: a credential's message of more
// than one line (errors joined) is quoted, so each Target stays one row
// and the columns stay aligned.
func TestReportTableKeepsAMessageOnItsLine(t *testing.T) {
	report := &pipeline.Report{Targets: []pipeline.TargetReport{
		{Namespace: "ns", Name: "a", Credential: &credential.Credential{Status: "False", Reason: "MintFailed", Message: "requesting a token: refused\ndeleting the Secret: refused"}},
		{Namespace: "ns", Name: "a-much-longer-name", Credential: &credential.Credential{Status: "True", Reason: "Issued", Message: "issued"}},
	}}
	var stdout, stderr bytes.Buffer
	g := &globals{stdout: &stdout, stderr: &stderr}
	require.NoError(t, g.printReport(report, credentialsTable))
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	require.Len(t, lines, 3, stdout.String())
	assert.Contains(t, lines[1], `"requesting a token: refused\ndeleting the Secret: refused"`)
	assert.Equal(t, strings.Index(lines[1], "False"), strings.Index(lines[2], "True"), "aligned:\n%s", stdout.String())
}
