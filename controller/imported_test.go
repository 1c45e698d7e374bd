package controller

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/sitereport"
	"github.com/solar-pipeline/solar/renderer/targetreport"
)

// TestControllerGatesOnImportedReports (issue 52, the way back): the
// canary of beta's Rollout is on an air-gapped site, so its agent never
// writes a TargetReport into the API server; the site's report archive,
// imported while the controller runs into the folder of its --reports,
// passes the canary's wave and the controller admits plant-2.
func TestControllerGatesOnImportedReports(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "reports")
	require.NoError(t, os.Mkdir(dir, 0o700))
	live, err := sitereport.NewLive(dir, time.Second)
	require.NoError(t, err)
	e, before := startRolloutController(t, "Halt", func(o *Options) { o.Pipeline.ImportedReports = live.Report })
	plant1, plant2 := [2]string{"beta", "plant-1"}, [2]string{"beta", "plant-2"}
	var canary bootstrap
	require.Eventually(t, func() bool {
		one, _ := e.targetStatusOf(t, "beta", "plant-1")
		if one.Bootstrap != nil {
			canary = *one.Bootstrap
		}
		st, _ := e.targetStatusOf(t, "beta", "plant-2")
		held := findCondition(st.Conditions, "Ready")
		return held != nil && held.Reason == api.ReasonRolloutHeld && canary.Version != before[plant1].Version
	}, 2*time.Minute, 200*time.Millisecond, "the canary admitted, plant-2 held")

	// The site exports its reports, the archive is carried out and imported.
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	key, err := sign.NewKey(priv)
	require.NoError(t, err)
	verifier, err := sign.NewVerifier(key.PublicPEM())
	require.NoError(t, err)
	report := sitereport.Report{APIVersion: api.APIVersion, Kind: api.KindTargetReport,
		Metadata: sitereport.Metadata{Namespace: "beta", Name: "plant-1"},
		Spec:     e.runningSpec(t, canary, targetreport.Ready, "")}
	file := filepath.Join(t.TempDir(), "north.tar")
	now := time.Now()
	_, err = sitereport.Export(context.Background(), sitereport.Contents{Reports: []sitereport.Report{report}}, "north", key, now, file)
	require.NoError(t, err)
	_, err = sitereport.Import(context.Background(), file, verifier, dir, now)
	require.NoError(t, err)

	require.Eventually(t, func() bool {
		st, _ := e.targetStatusOf(t, "beta", "plant-2")
		c := findCondition(st.Conditions, "Ready")
		return c != nil && c.Status == metav1.ConditionTrue && st.Bootstrap.Version != before[plant2].Version
	}, 2*time.Minute, 200*time.Millisecond, "the imported report passed the canary: the rest admitted")
	r, err := e.dyn.Resource(kube.TargetReportGVR).Namespace("beta").Get(context.Background(), "plant-1", metav1.GetOptions{})
	if err == nil {
		releases, _, _ := unstructured.NestedSlice(r.Object, "spec", "releases")
		assert.Empty(t, releases, "the API server holds no report of the canary's releases: the archive passed it")
	} else {
		assert.True(t, apierrors.IsNotFound(err), "%v", err)
	}
}
