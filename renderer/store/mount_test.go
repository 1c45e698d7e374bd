package store

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// mountLog records the requests of a client and refuses mounts (403) when
// refuse is set, as a registry that gives no pull right on the other
// repository does.
type mountLog struct {
	mu     sync.Mutex
	list   []string
	refuse bool
}

func (l *mountLog) wrap(next http.RoundTripper) http.RoundTripper {
	return rtFunc(func(req *http.Request) (*http.Response, error) {
		l.mu.Lock()
		refuse := l.refuse && req.URL.Query().Has("mount")
		l.mu.Unlock()
		var resp *http.Response
		var err error
		if refuse {
			resp = &http.Response{StatusCode: http.StatusForbidden, Status: "403 Forbidden", Header: http.Header{},
				Body: http.NoBody, Request: req}
		} else if resp, err = next.RoundTrip(req); err != nil {
			return nil, err
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		line := req.Method
		if req.URL.Query().Has("mount") {
			line += " mount"
		}
		l.list = append(l.list, line+" "+resp.Status[:3])
		return resp, nil
	})
}

func (l *mountLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.list
	l.list = nil
	return out
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestRemoteMountsWhatAnotherRepositoryHas: a blob the run pushed into one
// repository is mounted into the next in one request; a mount the
// registry cannot do (the other repository lost the blob) is an upload in
// the session it opened, two requests as without; a refused mount is a
// plain push, and the run asks for no mount again. Each time the blob is
// there afterwards.
func TestRemoteMountsWhatAnotherRepositoryHas(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a registry")
	}
	ctx := context.Background()
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	log := &mountLog{}
	r, err := NewRemote(RemoteOptions{Host: reg.Host, Prefix: "p", Username: reg.Username, Password: reg.Password, PlainHTTP: true, Wrap: log.wrap})
	require.NoError(t, err)
	data := []byte("a blob two repositories share")
	d := ocispec.Descriptor{MediaType: "application/octet-stream", Digest: digest.FromBytes(data), Size: int64(len(data))}
	push := func(name string) []string {
		t.Helper()
		repo, err := r.Repository(ctx, name)
		require.NoError(t, err)
		log.take()
		require.NoError(t, repo.Push(ctx, d, bytes.NewReader(data)))
		got := log.take()
		ok, err := repo.Exists(ctx, d)
		require.NoError(t, err)
		assert.True(t, ok, "%s has the blob", name)
		return got
	}
	assert.Equal(t, []string{"POST 401", "POST 202", "PUT 201"}, push("a/one"), "the first push uploads (after the auth challenge)")
	assert.Equal(t, []string{"POST mount 201"}, push("a/two"), "the next one mounts")

	r.homes.learn(d.Digest, "p/a/lost") // a home that does not have it
	assert.Equal(t, []string{"POST mount 202", "PUT 201"}, push("a/three"), "the registry cannot mount: uploaded into its session")

	log.mu.Lock()
	log.refuse = true
	log.mu.Unlock()
	assert.Equal(t, []string{"POST mount 403", "POST 202", "PUT 201"}, push("a/four"), "refused: pushed")
	got := push("a/five")
	assert.Equal(t, []string{"POST 202", "PUT 201"}, got, "no mount asked after a refusal")
	assert.False(t, strings.Contains(strings.Join(got, " "), "mount"))
}
