package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestVersionFlag: solar --version prints what solar version prints, on
// stdout, and exits 0 (it was an unknown flag).
func TestVersionFlag(t *testing.T) {
	code, out, errOut := solar(t, "--version")
	assert.Equal(t, 0, code, errOut)
	_, want, _ := solar(t, "version")
	assert.Equal(t, want, out)
	assert.True(t, strings.HasPrefix(out, "solar "), out)
}
