package publish

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/store"
)

// TestUpdateDocumentLosesNoChange: writers that update one document at the
// same time, on a real registry, each apply their change to the newest
// document that holds: the set each adds its marks to ends with all their
// marks.
func TestUpdateDocumentLosesNoChange(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a registry")
	}
	ctx := context.Background()
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	remote, err := store.NewRemote(store.RemoteOptions{Host: reg.Host, Prefix: "p", Username: reg.Username, Password: reg.Password, PlainHTTP: true})
	require.NoError(t, err)
	// The settle time is what the compare-and-set rests on: a writer whose
	// tag check and tag write lie further apart than it can overwrite a
	// version confirmed meanwhile. 50 ms lost a change now and then on two
	// busy cores (1 run in 10); solar's default (pipeline.DefaultSettle).
	opts := DocumentOptions{ArtifactType: api.ArtifactTypeRollout, MediaType: api.MediaTypeRollout, Settle: 500 * time.Millisecond}
	// Each writer adds its marks to a set: applied twice, a change gives
	// the same set.
	add := func(mark string) func([]byte) ([]byte, error) {
		return func(cur []byte) ([]byte, error) {
			marks := strings.Fields(string(cur))
			if !slices.Contains(marks, mark) {
				marks = append(marks, mark)
			}
			slices.Sort(marks)
			return []byte(strings.Join(marks, " ")), nil
		}
	}
	const writers, each = 3, 4
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				_, err := UpdateDocument(ctx, remote, "a/doc", add(fmt.Sprintf("w%di%d", w, i)), opts)
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	body, version, err := ReadDocument(ctx, remote, "a/doc", opts)
	require.NoError(t, err)
	assert.Len(t, strings.Fields(string(body)), writers*each, "no change lost: %s", body)

	same, err := UpdateDocument(ctx, remote, "a/doc", func(cur []byte) ([]byte, error) { return cur, nil }, opts)
	require.NoError(t, err)
	assert.Equal(t, body, same)
	_, again, err := ReadDocument(ctx, remote, "a/doc", opts)
	require.NoError(t, err)
	assert.Equal(t, version, again, "a change that changes nothing writes nothing")
}
