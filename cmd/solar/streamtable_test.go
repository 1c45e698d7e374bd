package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
