package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/browser"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/rollout"
	"github.com/solar-pipeline/solar/renderer/rolloutstore"
)

// TestBrowser (issue 51, done-when 1, on the API server of the other UI
// tests): a real headless Chromium logs in through the test OpenID
// Provider, sees the overview of what alice may see, follows a Target,
// watches a rollout advance without reloading (the state written to the
// store, the page told by the live stream) and pauses it with its button.
// Screenshots are kept ($SOLAR_TEST_ARTIFACTS).
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real API server, an OpenID provider and Chromium")
	}
	op, login := aliceOIDC(t)
	e := startUI(t, login)
	b := browser.Start(t, op.Certificate(), e.http.Certificate())

	b.Do(t, chromedp.Navigate(e.http.URL+"/"), browser.OIDCLogin("alice", "alice-password"),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/targets/alpha/alpha-edge"]`)))
	body := b.TextNow(`main`)
	assert.Contains(t, body, "Unknown: 1", "alpha's Target by state")
	assert.NotContains(t, body, "beta")
	b.Screenshot(t, "overview")

	b.Follow(t, `a[href="/targets/alpha/alpha-edge"]`, `#releases`)
	// Polled: chromedp's node ids of the page a click left may outlive it.
	require.Eventually(t, func() bool { return strings.Contains(b.TextNow(`h1`), "alpha/alpha-edge") }, 20*time.Second, 100*time.Millisecond)
	b.Screenshot(t, "target")

	b.Do(t, chromedp.Navigate(e.http.URL+"/rollouts/alpha/web"), chromedp.WaitVisible(chromedp.CSS(`#members`)))
	require.Eventually(t, func() bool {
		return b.TextNow(`#live`) == "Live updates: on"
	}, 20*time.Second, 100*time.Millisecond, "the live stream did not connect")
	b.Screenshot(t, "rollout-before")
	_, err := rolloutstore.Update(context.Background(), e.server.opts.Store, "alpha", "web", func(d *rolloutstore.Doc) (*rolloutstore.Doc, error) {
		d.Phase, d.Decision.Phase, d.Decision.Message = rollout.Done, rollout.Done, "every wave passed (1)"
		d.Decision.Members[0].State = rollout.Passed
		return d, nil
	}, rolloutstore.Options{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return b.TextNow(`[data-field="phase"]`) == rollout.Done
	}, 20*time.Second, 100*time.Millisecond, "the page did not show the rollout's new phase without a reload")
	assert.Contains(t, b.TextNow(`#members`), rollout.Passed)
	b.Screenshot(t, "rollout-advanced")

	b.Do(t, chromedp.Click(chromedp.CSS(`form[action$="/pause"] button`)))
	require.Eventually(t, func() bool { // the page the action redirects to
		return b.TextNow(`[data-field="flags"]`) == "paused"
	}, 20*time.Second, 100*time.Millisecond, "the page does not say paused")
	b.Screenshot(t, "paused")
	doc, err := rolloutstore.Read(context.Background(), e.server.opts.Store, "alpha", "web")
	require.NoError(t, err)
	assert.True(t, doc.Paused, "the button paused it")
}

// aliceOIDC starts the test OpenID Provider with user alice (password
// alice-password) and returns it and the UI's login at it, given the UI's
// callback (startUI's login), naming users by preferred_username.
func aliceOIDC(t *testing.T) (*testenv.OIDC, func(callback string) *OIDCOptions) {
	t.Helper()
	op := testenv.StartOIDC(t)
	op.AddUser(t, "alice", "alice-password", "operators")
	return op, func(callback string) *OIDCOptions {
		id, secret := op.AddClient(t, callback)
		return &OIDCOptions{Issuer: op.Issuer, ClientID: id, ClientSecret: secret, RedirectURL: callback, HTTPClient: op.HTTPClient(),
			UsernameClaim: "preferred_username", UsernamePrefix: "-"}
	}
}
