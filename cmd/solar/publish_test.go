package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/countproxy"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

func needRegistry(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test runs a real registry (the Distribution registry)")
	}
}

// publishCLI runs solar publish with the password on stdin and checks that it
// never shows up in the output.
func publishCLI(t *testing.T, reg *testenv.Registry, password string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args = append([]string{"publish", "--username", reg.Username, "--password-stdin"}, args...)
	code := run(context.Background(), args, strings.NewReader(password+"\n"), &stdout, &stderr)
	assert.NotContains(t, stdout.String(), password, "the password is never printed")
	assert.NotContains(t, stderr.String(), password, "the password is never printed")
	return code, stdout.String(), stderr.String()
}

// TestPublishTLS publishes examples/ over TLS with basic auth, then pulls and
// templates every bootstrap chart with the real helm CLI.
func TestPublishTLS(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true})
	registry := reg.Host + "/solar"

	// Failures first: each leaves the registry as it was.
	code, _, stderr := publishCLI(t, reg, "wrong", "--no-credentials", "--ca-file", reg.CAFile, "--registry", registry, "../../examples")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "registry "+reg.Host+"/solar: reading the index of")
	assert.Contains(t, stderr, "the registry denied access: 401 Unauthorized to GET https://"+reg.Host+"/v2/solar/")
	assert.NotContains(t, stderr, "map[", "no raw error details")
	assert.Contains(t, stderr, "401 Unauthorized")

	code, _, stderr = publishCLI(t, reg, reg.Password, "--no-credentials", "--registry", registry, "../../examples")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "TLS certificate is not trusted")
	assert.Contains(t, stderr, "(pass --ca-file")

	code, stdout, stderr := publishCLI(t, reg, reg.Password, "-v", "--no-credentials", "--ca-file", reg.CAFile, "--registry", registry, "-o", "json", "../../examples")
	require.Equal(t, 0, code, stderr)
	r := decodeReport(t, stdout)
	require.Len(t, r.Targets, 4)
	for _, tr := range r.Targets {
		assert.Equal(t, "0.0.1", tr.Version, "nothing was written by the failed runs")
		assert.Equal(t, publish.Create, tr.Action)
		assert.Contains(t, stderr, fmt.Sprintf("%s/%s 0.0.1 create", tr.Namespace, tr.Name), "with -v, a line per Target on a pipe")

		dir := t.TempDir()
		testenv.Helm(t, "pull", "oci://"+registry+"/"+tr.Repository, "--version", tr.Version,
			"--username", reg.Username, "--password", reg.Password, "--ca-file", reg.CAFile, "-d", dir)
		out := testenv.Helm(t, "template", "solar-bootstrap", filepath.Join(dir, "bootstrap-"+tr.Name+"-0.0.1.tgz"), "-n", "flux-system")
		for _, rel := range tr.Releases {
			assert.Contains(t, out, fmt.Sprintf("url: \"oci://%s/%s\"", registry, rel.Repository))
			assert.Contains(t, out, fmt.Sprintf("tag: %q", rel.Version))
		}
	}
}

// TestPublishContentAddressed counts, through a proxy, what each publish asks
// of the registry.
func TestPublishContentAddressed(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	proxy := testenv.StartProxy(t, reg.Host)
	registry := proxy.Host + "/solar"
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	pub := func(args ...string) (int, pipeline.Report, []string) {
		t.Helper()
		code, stdout, stderr := publishCLI(t, reg, reg.Password, append([]string{"--no-credentials", "--plain-http", "--registry", registry, "-o", "json"}, args...)...)
		require.NotEqual(t, 1, code, stderr)
		return code, decodeReport(t, stdout), proxy.Take()
	}

	// A dry run on an empty registry: changes pending, nothing written.
	code, dry, reqs := pub("--dry-run", "--exit-code", examples)
	assert.Equal(t, 2, code)
	assert.Zero(t, countproxy.Writes(reqs))

	code, first, reqs := pub("--exit-code", examples)
	assert.Equal(t, 2, code, "charts were created")
	assert.Equal(t, digests(dry), digests(first), "the dry run predicted the publish")
	charts := len(digests(first))
	require.Equal(t, 10, charts)
	// The charts' tag lists (an index's are its versions: asked to read it).
	tagLists := func(reqs []string) int {
		return len(slices.DeleteFunc(slices.Clone(reqs), func(r string) bool {
			return !strings.Contains(r, "/tags/list") || strings.Contains(r, "/solar-index/")
		}))
	}
	assert.Zero(t, tagLists(reqs), "the catalog lists none of these repositories: their tags are not asked for: %v", reqs)
	t.Logf("first publish: %d requests for %d new charts (%.1f per chart), %d of them writes",
		len(reqs), charts, float64(len(reqs))/float64(charts), countproxy.Writes(reqs))

	code, second, reqs := pub("--exit-code", examples)
	assert.Equal(t, 0, code, "nothing changed")
	assert.Equal(t, digests(first), digests(second))
	assert.Zero(t, countproxy.Writes(reqs), "unchanged input writes no blob and no manifest: %v", reqs)
	// The namespace indexes answer: three requests each (the versions of
	// the index, the highest one's manifest, its layer), and the challenge
	// of the first (of both, when they are read at the same moment); no
	// chart repository is asked.
	for _, r := range reqs {
		assert.Regexp(t, `^GET /v2/solar/(alpha|beta)/solar-index/(tags/list|manifests/0\.0\.\d+|blobs/sha256:[0-9a-f]{64})$`, r)
	}
	assert.LessOrEqual(t, len(reqs), 8, "three per namespace and the challenges: %v", reqs)
	t.Logf("unchanged publish: %d requests for %d Targets (%.1f per Target), %d charts",
		len(reqs), len(second.Targets), float64(len(reqs))/float64(len(second.Targets)), charts)
	code, full, reqs := pub("--exit-code", "--full", examples)
	assert.Equal(t, 0, code, "nothing changed")
	assert.Equal(t, digests(first), digests(full))
	assert.Equal(t, charts, tagLists(reqs), "--full lists each repository's versions once")
	for _, r := range reqs {
		if countproxy.Writes([]string{r}) > 0 {
			assert.Contains(t, r, "/solar-index/", "--full writes the indexes only: it removes the entries of what it asks, then writes them back")
		}
	}

	// One Release changes: exactly its chart and the bootstraps using it.
	releases := filepath.Join(examples, "alpha", "releases.yaml")
	b, err := os.ReadFile(releases)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(releases, bytes.Replace(b, []byte("replicaCount: 2"), []byte("replicaCount: 3"), 1), 0o644))
	_, third, reqs := pub(examples)
	var moved []string
	for repo, v := range digests(third) {
		if v != digests(second)[repo] {
			moved = append(moved, repo+" "+strings.Fields(v)[0])
		}
	}
	assert.ElementsMatch(t, []string{"alpha/alpha/release-podinfo-stable 0.0.2", "alpha/bootstrap-edge-1 0.0.2"}, moved)
	t.Logf("one Release changed: %d requests, %d writes", len(reqs), countproxy.Writes(reqs))
}

// TestPublishConcurrentWriters runs two, then three publishes (in process, at
// once) of different content into one namespace of a real registry: no update
// is lost, every writer's version holds its own content, versions only rise,
// every report matches the store, and solar verify passes. The namespace index
// they merged agrees with the repositories.
func TestPublishConcurrentWriters(t *testing.T) {
	needRegistry(t)
	for _, writers := range []int{2, 3} {
		t.Run(fmt.Sprint(writers), func(t *testing.T) {
			reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
			registry := reg.Host + "/solar"
			var inputs []string
			for i := range writers {
				dir := t.TempDir()
				testenv.CopyExamples(t, dir)
				releases := filepath.Join(dir, "examples", "alpha", "releases.yaml")
				b, err := os.ReadFile(releases)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(releases, bytes.Replace(b, []byte("replicaCount: 2"), fmt.Appendf(nil, "replicaCount: %d", 10+i), 1), 0o644))
				inputs = append(inputs, filepath.Join(dir, "examples"))
			}
			var wg sync.WaitGroup
			reports := make([]pipeline.Report, writers)
			for i, in := range inputs {
				wg.Go(func() {
					code, stdout, stderr := publishCLI(t, reg, reg.Password, "--no-credentials", "--plain-http", "--registry", registry, "-n", "alpha", "-o", "json", in)
					assert.Equal(t, 0, code, stderr)
					reports[i] = decodeReport(t, stdout)
				})
			}
			wg.Wait()
			require.False(t, t.Failed(), "every publish must succeed")

			ctx := context.Background()
			store, err := store.NewRemote(store.RemoteOptions{Host: reg.Host, Prefix: "solar", Username: reg.Username, Password: reg.Password, PlainHTTP: true})
			require.NoError(t, err)
			const contested = "alpha/alpha/release-podinfo-stable"
			versions := map[string]string{} // version -> digest of the contested chart
			for _, r := range reports {
				for repo, v := range digests(r) {
					version, digest := strings.Fields(v)[0], strings.Fields(v)[1]
					repository, err := store.Repository(ctx, repo)
					require.NoError(t, err)
					desc, err := repository.Resolve(ctx, version)
					require.NoError(t, err, "%s:%s", repo, version)
					assert.Equal(t, digest, desc.Digest.String(), "%s:%s holds what its writer reported", repo, version)
					if repo == contested {
						assert.NotContains(t, versions, version, "two writers of other content reported one version")
						versions[version] = digest
					}
				}
			}
			assert.Len(t, versions, writers, "one version per writer: no update lost")
			want := []string{}
			for i := range writers {
				want = append(want, fmt.Sprintf("0.0.%d", i+1))
			}
			repository, err := store.Repository(ctx, contested)
			require.NoError(t, err)
			var tags []string
			require.NoError(t, repository.Tags(ctx, "", func(ts []string) error { tags = append(tags, ts...); return nil }))
			assert.ElementsMatch(t, want, tags, "versions rise one at a time, no gap")

			var stdout, stderr bytes.Buffer
			code := run(ctx, []string{"verify", "--registry", registry, "--plain-http", "--username", reg.Username, "--password-stdin"},
				strings.NewReader(reg.Password+"\n"), &stdout, &stderr)
			assert.Equal(t, 0, code, "verify:\n%s\n%s", stdout.String(), stderr.String())
			assert.Contains(t, stderr.String(), "checked 1 namespace index", "the index the writers merged holds")

			// What the index the writers merged says is what the
			// repositories say: for each input, a dry run that trusts it
			// and one that asks every repository (--full) agree.
			for _, in := range inputs {
				var reports [2]map[string]string
				for k, mode := range []string{"--dry-run", "--full"} {
					code, stdout, stderr := publishCLI(t, reg, reg.Password, "--no-credentials", "--plain-http", "--registry", registry, "-n", "alpha", "--dry-run", mode, "-o", "json", in)
					require.Equal(t, 0, code, stderr)
					reports[k] = digests(decodeReport(t, stdout))
				}
				assert.Equal(t, reports[1], reports[0], "the index agrees with the repositories")
			}
		})
	}
}

// TestPublishRetriesAndUnreachable: 503s and 429s are retried with backoff; a
// registry nobody listens on fails clearly.
func TestPublishRetriesAndUnreachable(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	proxy := testenv.StartProxy(t, reg.Host)
	proxy.FailNext(3, 503)
	code, _, stderr := publishCLI(t, reg, reg.Password, "--no-credentials", "--plain-http", "--registry", proxy.Host, "-n", "beta", "../../examples")
	require.Equal(t, 0, code, stderr)
	proxy.FailNext(2, 429)
	code, stdout, stderr := publishCLI(t, reg, reg.Password, "--no-credentials", "--plain-http", "--registry", proxy.Host, "-n", "beta", "-o", "json", "../../examples")
	require.Equal(t, 0, code, stderr)
	for _, tr := range decodeReport(t, stdout).Targets {
		assert.Equal(t, publish.Unchanged, tr.Action)
	}

	nobody := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	code, _, stderr = publishCLI(t, reg, reg.Password, "--no-credentials", "--plain-http", "--registry", nobody, "-n", "beta", "../../examples")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "registry "+nobody+": reading the index of beta")
	assert.Contains(t, stderr, "the registry cannot be reached")
}

// TestPublishWithoutCatalog: a registry without the catalog API (Docker Hub,
// GHCR; here the proxy answers 404 to it) publishes all the same, and warns
// that orphans were not looked for; again, every chart is unchanged, and the
// namespace indexes, which name the repositories, stand in for the catalog.
// --prune, which needs the catalog, fails before anything is published.
func TestPublishWithoutCatalog(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	proxy := testenv.StartProxy(t, reg.Host)
	proxy.Refuse("/v2/_catalog", 404)
	pub := func(args ...string) (int, string, string) {
		t.Helper()
		proxy.Take()
		return publishCLI(t, reg, reg.Password, append([]string{"--no-credentials", "--plain-http", "--registry", proxy.Host + "/solar", "-o", "json"}, args...)...)
	}

	code, _, stderr := pub("--prune", "../../examples")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "--prune: the bootstrap repositories of Targets no longer in the input cannot be found")
	assert.Contains(t, stderr, "404 Not Found to GET")
	assert.Zero(t, countproxy.Writes(proxy.Take()), "nothing is published")

	for _, want := range []string{"create", "unchanged"} {
		code, stdout, stderr := pub("../../examples")
		require.Equal(t, 0, code, stderr)
		if want == "create" {
			assert.Contains(t, stderr, "orphans not looked for")
		} else {
			assert.NotContains(t, stderr, "orphans not looked for", "the namespace indexes name the repositories")
		}
		report := decodeReport(t, stdout)
		require.Len(t, report.Targets, 4)
		for _, tr := range report.Targets {
			assert.Equal(t, want, tr.Action, tr.Name)
		}
	}
	assert.Zero(t, countproxy.Writes(proxy.Take()), "the second publish writes nothing")
}
