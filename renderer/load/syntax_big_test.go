package load

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSyntaxErrorSearchIsBounded: a syntax error at the end of a long mapping
// (the decoder names the mapping's first line) is found at its line by a
// search that decodes a bounded number of bytes: in a 256 KiB document the
// line and column, in a 4 MiB one (not with -short) the decoder's line.
func TestSyntaxErrorSearchIsBounded(t *testing.T) {
	line, got := brokenAtEnd(t, 256<<10)
	assert.Equal(t, fmt.Sprintf("big.yaml:%d:4: syntax error: did not find expected key", line), got)
	if testing.Short() {
		return
	}
	_, got = brokenAtEnd(t, 4<<20)
	assert.Equal(t, "big.yaml:2: syntax error: did not find expected key", got)
}

// brokenAtEnd loads a document of about size bytes with a syntax error on its
// last line, and returns that line and the problem.
func brokenAtEnd(t *testing.T, size int) (int, string) {
	var b strings.Builder
	b.WriteString("kind: Release\nspec:\n  values:\n")
	for b.Len() < size {
		b.WriteString("    key: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]\n")
	}
	line := strings.Count(b.String(), "\n") + 1
	b.WriteString("   bad: x\n")
	start := time.Now()
	_, problems := Bytes("big.yaml", []byte(b.String()), Options{})
	require.Len(t, problems, 1)
	t.Logf("%d bytes: %s", size, time.Since(start))
	return line, problems[0].String()
}
