package fleet

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/device/wire"
)

// TestAttemptDigestIsPackAttempts: the digest a device computes for an
// attempt (wire.AttemptDigest, no ORAS on the device) is the one PackAttempt
// pushes and the bucket binds, with and without the optional fields.
func TestAttemptDigestIsPackAttempts(t *testing.T) {
	a, _ := attempt(t, "dev-1", 3)
	b := a
	b.PreviousVersion, b.NotAfter = "1.2.0", "2027-01-31T00:00:00Z"
	b, err := b.Seal()
	require.NoError(t, err)
	for _, x := range []wire.Attempt{a, b} {
		p, err := PackAttempt(context.Background(), x)
		require.NoError(t, err)
		d, err := wire.AttemptDigest(x)
		require.NoError(t, err)
		assert.Equal(t, p.Root.Digest.String(), d)
	}
}
