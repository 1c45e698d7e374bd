package pipeline

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/countproxy"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/store"
)

// TestBatchedPublishOverlapsWaits: a batched publish to a registry begins
// the next batch while one waits a settle, instead of one batch after the
// other: with a change in every namespace (a namespace a batch), the
// requests of the second namespace begin before the last request of the
// first. The registry then holds what a publish of the whole gives: the
// reports of both are the same, cold and after the change.
func TestBatchedPublishOverlapsWaits(t *testing.T) {
	defer func(n int) { batchTargets = n }(batchTargets)
	batchTargets = 3
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	proxy, err := countproxy.Start(reg.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	tree, changed := generated(t, 12, 3), generated(t, 12, 3, "-change", "34")

	for i, dir := range []string{tree, changed} {
		whole := publishRegistry(t, reg, proxy.Host, "whole", dir, false)
		proxy.Take()
		batched := publishRegistry(t, reg, proxy.Host, "batched", dir, true)
		require.JSONEq(t, whole, batched, "run %d: the reports differ", i)
		if i == 0 {
			continue
		}
		first, second := -1, -1
		for k, r := range proxy.Take() {
			if strings.Contains(r, "/batched/ns-0001/") {
				first = k // the last request of the first namespace
			}
			if second < 0 && strings.Contains(r, "/batched/ns-0002/") {
				second = k
			}
		}
		require.Positive(t, second, "the second namespace was published")
		require.Less(t, second, first, "the second batch begins while the first waits")
	}
}

// publishRegistry publishes dir (batched or not) to the registry at host
// under prefix, with a short settle, and gives the report as JSON.
func publishRegistry(t *testing.T, reg *testenv.Registry, host, prefix, dir string, batch bool) string {
	t.Helper()
	ctx := context.Background()
	opts := Options{LoadOptions: LoadOptions{Paths: []string{dir}},
		CredentialOptions: CredentialOptions{NoCredentials: true},
		ResolveOptions:    ResolveOptions{Batch: batch, Registry: "registry.example.com/solar"},
		PublishOptions:    PublishOptions{Concurrency: 2, Settle: 300 * time.Millisecond, Now: time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)}}
	plan, err := NewPlan(ctx, opts)
	require.NoError(t, err)
	require.False(t, plan.Problems.HasErrors(), "%v", plan.Problems)
	remote, err := store.NewRemote(store.RemoteOptions{Host: host, Prefix: prefix, Username: reg.Username, Password: reg.Password, PlainHTTP: true})
	require.NoError(t, err)
	report, err := Run(ctx, plan, remote, opts)
	require.NoError(t, err)
	require.NotEmpty(t, report.Targets)
	j, err := json.Marshal(report)
	require.NoError(t, err)
	return string(j)
}
