package ui

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/renderer/rollout"
	"github.com/solar-pipeline/solar/renderer/rolloutstore"
)

// TestApproveNamesAWave (issue 51): the rollout page says which wave waits
// for an approval (one that passed and whose Rollout's spec asks for one)
// and its approve button names that wave; the server approves the wave the
// form names, and refuses a form that names none, a wave the rollout does
// not have, or one whose policy asks for no approval (400, nothing
// written).
func TestApproveNamesAWave(t *testing.T) {
	e := startUI(t, nil)
	alice, csrf := e.as("alice")
	ctx := context.Background()
	st := e.server.opts.Store
	passed := time.Now().Add(-time.Minute).UTC()
	_, err := rolloutstore.Update(ctx, st, "alpha", "web", func(d *rolloutstore.Doc) (*rolloutstore.Doc, error) {
		d.Waves = []rollout.WaveState{{Name: "canary", Members: []string{"alpha-edge"}, Started: &passed, PassedAt: &passed},
			{Name: "rest", Members: []string{}}}
		d.Decision.Phase, d.Decision.Message = rollout.Waiting, "wave canary passed; wave rest waits for approval (solar rollout approve)"
		return d, nil
	}, rolloutstore.Options{})
	require.NoError(t, err)
	page := func(want func(string) bool) string {
		var body string
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !want(body); time.Sleep(100 * time.Millisecond) {
			_, body, _ = e.do(t, alice, "GET", "/rollouts/alpha/web", nil)
		}
		return body
	}

	// The Rollout's policy asks for no approval (startUI's): canary passed,
	// but no button offers to approve it.
	body := page(func(b string) bool { return strings.Contains(b, "wave canary passed") })
	require.Contains(t, body, "wave canary passed", "the state is shown")
	assert.Contains(t, body, "No wave waits for an approval")
	assert.NotContains(t, body, "approve wave canary", "its policy asks for no approval")
	code, body, _ := e.do(t, alice, "POST", "/rollouts/alpha/web/approve", url.Values{"csrf": {csrf}, "wave": {"canary"}})
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, `wave "canary" of Rollout alpha/web does not ask for an approval`)

	// canary asks for an approval: its button names it.
	web, err := e.dyn.Resource(kube.GVR(api.KindRollout)).Namespace("alpha").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedSlice(web.Object, []any{map[string]any{"name": "canary", "count": int64(1), "approval": true},
		map[string]any{"name": "rest"}}, "spec", "waves"))
	_, err = e.dyn.Resource(kube.GVR(api.KindRollout)).Namespace("alpha").Update(ctx, web, metav1.UpdateOptions{})
	require.NoError(t, err)
	const button = `<input type="hidden" name="wave" value="canary"><button type="submit">approve wave canary</button>`
	body = page(func(b string) bool { return strings.Contains(b, button) })
	require.Contains(t, body, button, "the approve button names the wave")
	assert.Contains(t, body, "Wave canary passed and asks for an approval; wave rest starts once it is approved")
	// The waves table: each wave's state and its policy (defaults where
	// the spec says nothing).
	assert.Regexp(t, `<tr><td>canary</td><td>1</td><td>[0-9-]+ [0-9:]+Z</td><td>[0-9-]+ [0-9:]+Z</td><td>100 %</td><td>0 %</td><td>10m</td><td>approval</td></tr>`, body)
	assert.Contains(t, body, `<tr><td>rest</td><td>0</td><td>not yet</td><td>not yet</td><td>100 %</td><td>0 %</td><td>10m</td><td>-</td></tr>`)

	before, err := rolloutstore.Read(ctx, st, "alpha", "web")
	require.NoError(t, err)
	for _, form := range []struct{ wave, says string }{
		{"nope", `Rollout alpha/web has no wave "nope": nothing approved`},
		{"", "approve names the wave to approve"},
	} {
		code, body, _ := e.do(t, alice, "POST", "/rollouts/alpha/web/approve", url.Values{"csrf": {csrf}, "wave": {form.wave}})
		assert.Equal(t, http.StatusBadRequest, code, form.wave)
		assert.Contains(t, body, form.says, form.wave)
	}
	after, err := rolloutstore.Read(ctx, st, "alpha", "web")
	require.NoError(t, err)
	assert.Equal(t, before, after, "a refused approval writes nothing")

	code, body, _ = e.do(t, alice, "POST", "/rollouts/alpha/web/approve", url.Values{"csrf": {csrf}, "wave": {"canary"}})
	require.Equal(t, http.StatusSeeOther, code, body)
	after, err = rolloutstore.Read(ctx, st, "alpha", "web")
	require.NoError(t, err)
	assert.Equal(t, []string{"canary"}, after.Approved, "the wave the form named is approved")
	_, body, _ = e.do(t, alice, "GET", "/rollouts/alpha/web", nil)
	assert.NotContains(t, body, "approve wave canary", "approved: it waits no more")
	assert.Contains(t, body, "No wave waits for an approval")
	assert.Contains(t, body, "<td>approval (approved)</td>")
}
