package mirror

import (
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReference(t *testing.T) {
	for _, c := range []struct{ ref, want string }{
		{"ghcr.io/stefanprodan/charts/podinfo:6.7.0", "site.example:5000/mirror/ghcr.io/stefanprodan/charts/podinfo:6.7.0"},
		{"nginx:1.27", "site.example:5000/mirror/docker.io/library/nginx:1.27"},
		{"docker.io/library/nginx", "site.example:5000/mirror/docker.io/library/nginx:latest"},
		{"127.0.0.1:5001/solar-test/podbin@sha256:" + sixtyFour, "site.example:5000/mirror/127.0.0.1_5001/solar-test/podbin@sha256:" + sixtyFour},
		{"ghcr.io/a/b:1.0@sha256:" + sixtyFour, "site.example:5000/mirror/ghcr.io/a/b:1.0@sha256:" + sixtyFour},
	} {
		got, err := Reference("site.example:5000/mirror/", c.ref)
		require.NoError(t, err, c.ref)
		assert.Equal(t, c.want, got, c.ref)
	}
	// What a registry takes: no colon in the path.
	got, err := Reference("site.example:5000/mirror", "127.0.0.1:5001/a/b:1.0")
	require.NoError(t, err)
	_, err = name.ParseReference(got, name.StrictValidation)
	assert.NoError(t, err, got)
	_, err = Reference("site.example", "UPPER/case")
	assert.Error(t, err)
	_, err = Repository("", "ghcr.io/a/b")
	assert.ErrorContains(t, err, "no site registry")
}

const sixtyFour = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
