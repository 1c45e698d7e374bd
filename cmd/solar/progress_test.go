package main

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestInterruption: a command stopped by a signal says how far it got, not
// the error of the request the signal cut short; a read-only one that
// nothing was written; work not yet counted, no "0 of 0".
func TestInterruption(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cut := errors.New(`Put "https://registry/v2/x/blobs/uploads/abc?_state=...": context canceled`)

	var stderr bytes.Buffer
	g := &globals{ctx: ctx, stderr: &stderr}
	step := g.meter("Target")
	step(120, 1000)
	assert.EqualError(t, g.interruption(cut), "interrupted after 120 of 1000 Targets: what was finished stays; run again to continue")
	step(0, 1)
	assert.EqualError(t, g.interruption(cut), "interrupted after 0 of 1 Target: what was finished stays; run again to continue", "a count agrees with its number")

	g = &globals{ctx: ctx, stderr: &stderr, dryRun: true}
	g.meter("Target")
	assert.EqualError(t, g.interruption(cut), "interrupted: nothing was written", "nothing counted yet, and a dry run")

	g = &globals{ctx: context.Background(), stderr: &stderr}
	assert.Equal(t, cut, g.interruption(cut), "no signal: the error as it is")
	assert.Empty(t, stderr.String(), "no bar on a pipe")
}
