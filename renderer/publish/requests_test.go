package publish

import (
	"context"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/countproxy"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
)

var updateRequests = flag.Bool("update", false, "rewrite testdata/requests/*.txt from the requests the publish sent")

// requestLog records every request a client sends (under its retries) as
// "METHOD PATH?QUERY STATUS", digests and upload sessions replaced by
// placeholders, so that the list is the same at every run.
type requestLog struct {
	mu   sync.Mutex
	list []string
}

func (l *requestLog) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		status := "error"
		if err == nil {
			status = resp.Status[:3]
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.list = append(l.list, req.Method+" "+requestShape(req)+" "+status)
		return resp, err
	})
}

func (l *requestLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.list
	l.list = nil
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

var (
	digestRE = regexp.MustCompile(`sha256[:-][0-9a-f]{64}`)
	uploadRE = regexp.MustCompile(`/blobs/uploads/[^/?]+`)
)

// requestShape is the request's path and query with every digest <digest>
// and every upload session <session>.
func requestShape(req *http.Request) string {
	p := uploadRE.ReplaceAllString(req.URL.Path, "/blobs/uploads/<session>")
	p = digestRE.ReplaceAllStringFunc(p, func(d string) string {
		if d[6] == '-' {
			return "sha256-<digest>" // a referrers index's tag
		}
		return "<digest>"
	})
	if q := req.URL.Query(); len(q) > 0 {
		keys := make([]string, 0, len(q))
		for k := range q {
			keys = append(keys, k+"=")
		}
		slices.Sort(keys)
		p += "?" + strings.Join(keys, "&")
	}
	return p
}

// TestRequestsPerNewChart publishes new charts (a config and one layer, as
// a Helm chart has) into repositories the registry does not have, as solar
// publish does for a repository its catalog listing did not name, unsigned
// and then signed, and compares every request sent with testdata/requests:
// a request added or removed fails here until the list is updated (go test
// -run TestRequestsPerNewChart -update) and docs/benchmarks.md says why it
// is there. Each case is one run (one client): its first chart, then a
// second one, what every further new chart of the run costs, and a third
// with the same content as the first (the same Release's chart in another
// namespace). The third case is the signed one against a registry with
// the referrers API (referrersStandIn).
func TestRequestsPerNewChart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a registry")
	}
	ctx := context.Background()
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	direct := testenv.StartProxy(t, reg.Host)
	withReferrers := testenv.StartProxy(t, startReferrersStandIn(t, reg.Host, false))
	k, v := signingKey(t)
	for _, c := range []struct {
		name  string
		key   *sign.Key
		proxy *countproxy.Proxy
	}{{"unsigned", nil, direct}, {"signed", k, direct}, {"referrers-signed", k, withReferrers}} {
		t.Run(c.name, func(t *testing.T) {
			log, proxy := &requestLog{}, c.proxy
			remote, err := store.NewRemote(store.RemoteOptions{Host: proxy.Host, Prefix: "p", Username: reg.Username,
				Password: reg.Password, PlainHTTP: true, Wrap: log.wrap})
			require.NoError(t, err)
			for _, chart := range []struct{ repo, content string }{{"first", "first"}, {"next", "next"}, {"same", "first"}} {
				repo := c.name + "/" + chart.repo
				job := chartJob(repo, c.name+"/"+chart.content)
				results, err := Publish(ctx, remote, []Job{job}, Options{SigningKey: c.key, Absent: map[string]bool{repo: true}})
				require.NoError(t, err)
				require.Len(t, results, 1)
				assert.Equal(t, Create, results[0].Action)
				got := log.take()
				assert.Len(t, proxy.Take(), len(got), "the registry saw what the client sent")
				if c.key != nil {
					assert.NoError(t, checkSigned(t, remote, v, repo, "0.0.1"), "the signature is there")
					log.take()
					proxy.Take()
				}
				compareRequests(t, filepath.Join("testdata", "requests", c.name+"-"+chart.repo+".txt"), got)
			}
		})
	}
}

// chartJob has a Helm chart's shape: a config naming the chart and its
// version (its Chart.yaml), one layer. Two jobs of the same name have the
// same content (one Release's chart in two namespaces).
func chartJob(repo, name string) Job {
	return Job{Repository: repo, Pack: func(version string) (*Artifact, error) {
		return &Artifact{
			Config:      NewBlob("application/vnd.cncf.helm.config.v1+json", []byte(`{"name":"`+name+`","version":"`+version+`"}`)),
			Layers:      []Blob{NewBlob("application/vnd.cncf.helm.chart.content.v1.tar+gzip", []byte("the chart "+name))},
			Annotations: map[string]string{"org.opencontainers.image.version": version},
		}, nil
	}}
}

// compareRequests compares the requests got with the list in file (which
// -update writes).
func compareRequests(t *testing.T, file string, got []string) {
	t.Helper()
	if *updateRequests {
		require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
		require.NoError(t, os.WriteFile(file, []byte(strings.Join(got, "\n")+"\n"), 0o644))
	}
	want, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, strings.Split(strings.TrimSpace(string(want)), "\n"), got,
		"the requests of a new chart changed: update %s (-update) and the table in docs/benchmarks.md", file)
	t.Logf("%s: %d requests", file, len(got))
}
