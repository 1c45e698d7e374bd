package controller

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestControllerRBACIsEnough: config/controller applies as the docs say
// (kubectl apply -f config/controller/), and a controller with the
// ServiceAccount's rights alone (the API server's own RBAC checks them)
// publishes every Target and mints the agents' credentials.
func TestControllerRBACIsEnough(t *testing.T) {
	e := startEnv(t)
	out, err := exec.Command(testenv.Tool(t, "kubectl"), "--kubeconfig", e.api.Kubeconfig, "apply",
		"-f", filepath.Join(testenv.Root(t), "config", "controller")).CombinedOutput()
	require.NoError(t, err, "%s", out)

	opts := e.options(t)
	opts.Config = rest.CopyConfig(e.api.Config)
	opts.Config.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:solar-system:solar-controller"}
	opts.LeaderElection, opts.LeaderElectionNamespace = true, "solar-system"
	start(t, opts)
	e.waitReady(t, 2*time.Minute)
	for _, name := range []string{"edge-1", "edge-2"} {
		st, _ := e.targetStatusOf(t, "alpha", name)
		c := findCondition(st.Conditions, "AgentCredentialReady")
		require.NotNil(t, c, name)
		require.Equal(t, "Issued", c.Reason, "%s: %s", name, c.Message)
	}
}
