package pipeline

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
	"github.com/solar-pipeline/solar/renderer/verify"
)

// copySigned does what anyone who may push can do without the key: it
// copies the version from of repository src, with its signatures, into
// repository dst under the tag to.
func copySigned(t *testing.T, l *store.Layout, src, from, dst, to string) {
	t.Helper()
	ctx := context.Background()
	s, err := l.Repository(ctx, src)
	require.NoError(t, err)
	d, err := l.Repository(ctx, dst)
	require.NoError(t, err)
	desc, err := oras.Copy(ctx, s, from, d, to, oras.DefaultCopyOptions)
	require.NoError(t, err)
	refs, err := registry.Referrers(ctx, s.(content.ReadOnlyGraphStorage), desc, api.MediaTypeSigstoreBundle)
	require.NoError(t, err)
	require.NotEmpty(t, refs)
	for _, r := range refs {
		raw, err := content.FetchAll(ctx, s, r)
		require.NoError(t, err)
		var m ocispec.Manifest
		require.NoError(t, json.Unmarshal(raw, &m))
		for _, b := range append([]ocispec.Descriptor{m.Config}, m.Layers...) {
			data, err := content.FetchAll(ctx, s, b)
			require.NoError(t, err)
			if ok, _ := d.Exists(ctx, b); !ok {
				require.NoError(t, d.Push(ctx, b, bytes.NewReader(data)))
			}
		}
		if ok, _ := d.Exists(ctx, r); !ok {
			require.NoError(t, d.Push(ctx, r, bytes.NewReader(raw)))
		}
	}
}

// signedViolations are the violations of Verify with v that are about
// signatures.
func signedViolations(t *testing.T, dir string, v *sign.Verifier) []string {
	t.Helper()
	ctx := context.Background()
	l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{ReadOnly: true})
	require.NoError(t, err)
	defer l.Close()
	got, err := verify.Store(ctx, l, verify.Options{Verifier: v})
	require.NoError(t, err)
	var out []string
	for _, x := range got.Violations {
		if strings.Contains(x.Message, "signature") || strings.Contains(x.Message, "signed") {
			out = append(out, x.String())
		}
	}
	return out
}

// TestVerifyRefusesMovedSignature (S1, solar verify --key): edge-1's signed
// bootstrap chart copied, signature and all, as alpha/bootstrap-edge-2:0.0.2,
// and edge-1's first version tagged as 0.0.3 above its newest (a
// rollback): each is signed with the key, over its digest, and each is a
// violation, naming what the signature was made for.
func TestVerifyRefusesMovedSignature(t *testing.T) {
	ctx := context.Background()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	k, err := sign.NewKey(priv)
	require.NoError(t, err)
	v, err := sign.NewVerifier(k.PublicPEM())
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "out")
	changed := testenv.ExamplesPlan(t)
	for _, tp := range changed.Targets {
		for _, sel := range tp.Releases {
			if sel.Release.Name == "podinfo-stable" {
				sel.Release.Spec.Values["replicaCount"] = 3
			}
		}
	}
	for _, resolved := range []*Plan{plan(testenv.ExamplesPlan(t)), plan(changed)} {
		l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{})
		require.NoError(t, err)
		_, err = Run(ctx, resolved, l, Options{PublishOptions: PublishOptions{SigningKey: k}})
		require.NoError(t, err)
		require.NoError(t, l.Save(ctx))
		require.NoError(t, l.Close())
	}
	require.Empty(t, signedViolations(t, dir, v), "every version signed as what it is")

	l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{})
	require.NoError(t, err)
	copySigned(t, l, "alpha/bootstrap-edge-1", "0.0.2", "alpha/bootstrap-edge-2", "0.0.2")
	copySigned(t, l, "alpha/bootstrap-edge-1", "0.0.1", "alpha/bootstrap-edge-1", "0.0.3")
	require.NoError(t, l.Save(ctx))
	require.NoError(t, l.Close())

	const bad = ": no signature verifies with the keys given: signed for another repository or version: "
	assert.ElementsMatch(t, []string{
		"alpha/bootstrap-edge-1:0.0.3" + bad + "alpha/bootstrap-edge-1:0.0.1",
		"alpha/bootstrap-edge-2:0.0.2" + bad + "alpha/bootstrap-edge-1:0.0.2",
	}, signedViolations(t, dir, v))
}
