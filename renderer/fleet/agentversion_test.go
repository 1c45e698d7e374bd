package fleet

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestAgentVersion: a reference agent built with -X main.version=1.4.0 is
// pushed as 1.4.0 (given or not) and refused as 1.5.0; a file that is no Go
// program is not checked.
func TestAgentVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the reference agent")
	}
	bin := filepath.Join(t.TempDir(), "agent")
	cmd := exec.Command("go", "build", "-ldflags", "-X main.version=1.4.0", "-o", bin, "./cmd/solar-fleet-agent")
	cmd.Dir = testenv.Root(t)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	data, err := os.ReadFile(bin)
	require.NoError(t, err)
	agent := []Binary{{Platform: "linux/amd64", Name: "agent", Data: data}}

	v, err := AgentVersion(agent, "")
	require.NoError(t, err)
	assert.Equal(t, "1.4.0", v)
	v, err = AgentVersion(agent, "1.4.0")
	require.NoError(t, err)
	assert.Equal(t, "1.4.0", v)
	_, err = AgentVersion(agent, "1.5.0")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `agent reports version "1.4.0"`)

	other := []Binary{{Platform: "linux/arm64", Name: "agent-arm64", Data: []byte("agent 1.5.0 arm64\n")}}
	v, err = AgentVersion(other, "1.5.0")
	require.NoError(t, err)
	assert.Equal(t, "1.5.0", v)
	_, err = AgentVersion(other, "")
	assert.ErrorContains(t, err, "--version is required")
}
