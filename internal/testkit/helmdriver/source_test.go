package helmdriver

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// TestWithSourceRevision: the chart version gets the artifact digest's first
// 12 hex digits as build metadata, as mutateChartWithSourceRevision does,
// and a revision that does not fit the chart is refused with its message.
func TestWithSourceRevision(t *testing.T) {
	const hex = "68ee5879e98f0123456789abcdef0123456789abcdef0123456789abcdef0123"
	for _, c := range []struct{ version, revision, want, err string }{
		{"0.0.1", "0.0.1@sha256:" + hex, "0.0.1+68ee5879e98f", ""},
		{"6.8.0", "latest@sha256:" + hex, "6.8.0+68ee5879e98f", ""},
		{"1.0.0", "sha256:" + hex, "1.0.0+68ee5879e98f", ""},
		{"1.0.0+build.1", "1.0.0_build.1@sha256:" + hex, "1.0.0+68ee5879e98f", ""},
		{"0.0.1", "0.0.2@sha256:" + hex, "", "artifact revision 0.0.2 does not match chart version 0.0.1"},
		{"0.0.1", "0.0.1@sha256:68ee58", "", "invalid artifact revision sha256:68ee58"},
		{"0.0.1", "0.0.1", "", "artifact revision 0.0.1 does not match chart version 0.0.1"},
		{"one", "0.0.1@sha256:" + hex, "", "invalid chart version one"},
	} {
		ch := &chart.Chart{Metadata: &chart.Metadata{Name: "app", Version: c.version}}
		dgst, err := withSourceRevision(ch, c.revision)
		if c.err != "" {
			assert.EqualError(t, err, c.err, c.revision)
			continue
		}
		require.NoError(t, err, c.revision)
		assert.Equal(t, c.want, ch.Metadata.Version, c.revision)
		assert.Equal(t, "sha256:"+hex, dgst)
	}
}

// TestWaitError: Helm's readiness errors read as helm-controller's waiter
// writes them; other errors pass as they are.
func TestWaitError(t *testing.T) {
	helm := errors.Join(
		errors.New("resource Deployment/demo/app not ready. status: InProgress, message: Available: 0/1"),
		errors.New("resource StatefulSet/demo/db not ready. status: Failed, message: no"),
		context.DeadlineExceeded)
	assert.EqualError(t, waitError(helm), "timeout waiting for: [Deployment/demo/app status: 'InProgress', StatefulSet/demo/db status: 'Failed']")
	early := errors.New("resource Job/demo/migrate not ready. status: Failed, message: BackoffLimitExceeded")
	assert.EqualError(t, waitError(early), "failed early due to stalled resources: [Job/demo/migrate status: 'Failed']")
	other := errors.New(`Deployment.apps "app" is invalid`)
	assert.Equal(t, other, waitError(other))
}
