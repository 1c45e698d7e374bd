package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/countproxy"
	"github.com/solar-pipeline/solar/internal/testkit/storetest"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// TestPublishThroughFaults publishes examples/ and a generated tree through a
// proxy that fails 10 % of the requests (seeded: 500, 502, 503, 429 with and
// without Retry-After, reset connections, slow responses), into one registry,
// and the same without faults into another registry at the same address (the
// proxy is pointed at it): every publish completes through retries, the two
// registries end with the same tag → digest state (the namespace indexes
// included), and verify passes.
func TestPublishThroughFaults(t *testing.T) {
	needRegistry(t)
	clean := testenv.StartRegistry(t, testenv.RegistryOptions{})
	faulty := testenv.StartRegistry(t, testenv.RegistryOptions{})
	proxy := testenv.StartProxy(t, clean.Host)
	tree := filepath.Join(t.TempDir(), "tree")
	gen, err := exec.Command("go", "run", "../../scripts/genobjects", "-targets", "30", "-per", "10", "-registry", proxy.Host, "-out", tree).CombinedOutput()
	require.NoError(t, err, "%s", gen)

	publishAll := func(reg *testenv.Registry) {
		t.Helper()
		for _, input := range []string{"../../examples", tree} {
			for range 2 { // the second run: all unchanged
				code, _, stderr := publishCLI(t, reg, reg.Password, "--no-credentials", "--plain-http", "--registry", proxy.Host+"/solar", input)
				require.Equal(t, 0, code, stderr)
			}
		}
	}
	publishAll(clean)

	proxy.Retarget(faulty.Host)
	proxy.Faults(17, 0.10)
	publishAll(faulty)
	injected := proxy.Injected()
	total := 0
	for _, n := range injected {
		total += n
	}
	t.Logf("faults injected: %d of %d requests: %v", total, len(proxy.Take()), injected)
	for _, f := range countproxy.Faults {
		assert.Positive(t, injected[f], "fault %s was injected", f)
	}
	proxy.Faults(0, 0)

	want, got := registryState(t, clean, proxy, false), registryState(t, faulty, proxy, true)
	charts, indexes := 0, map[string]bool{}
	for tag := range want {
		if repo, _, _ := strings.Cut(tag, ":"); publish.IsIndexRepository(repo) {
			indexes[repo] = true
		} else {
			charts++
		}
	}
	assert.Equal(t, 55, charts, "10 charts of examples/, 30 bootstrap and 15 release charts of the tree")
	assert.Len(t, indexes, 5, "5 namespace indexes (each write a version)")
	assert.Equal(t, want, got, "the faulty run's tags hold what the clean run's do")
	code, _, stderr := publishCLI(t, faulty, faulty.Password, "--no-credentials", "--plain-http", "--registry", proxy.Host+"/solar", "--dry-run", tree)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "30 Targets: 0 charts would be created, 0 updated, 45 unchanged")
}

// registryState is registryTags of the registry behind proxy (pointed at reg
// when retarget says so), checked with solar verify.
func registryState(t *testing.T, reg *testenv.Registry, proxy *countproxy.Proxy, retarget bool) map[string]string {
	t.Helper()
	if retarget {
		proxy.Retarget(reg.Host)
	}
	state := storetest.RegistryTags(t, reg)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"verify", "--registry", reg.Host + "/solar", "--plain-http", "--username", reg.Username, "--password-stdin"},
		strings.NewReader(reg.Password+"\n"), &stdout, &stderr)
	require.Equal(t, 0, code, "verify:\n%s\n%s", stdout.String(), stderr.String())
	return state
}
