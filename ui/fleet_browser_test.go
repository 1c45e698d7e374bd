package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/browser"
)

// TestFleetBrowser (issue 51): in a real headless Chromium, alice's fleet
// page of alpha shows the rollback-failed device with its repair command,
// and, without a reload, a state written into the bucket (the row and the
// counts) and a new Device; her overview's counts follow too.
// Screenshots are kept ($SOLAR_TEST_ARTIFACTS).
func TestFleetBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real API server, nats-server, an OpenID provider and Chromium")
	}
	op, login := aliceOIDC(t)
	e := startFleetUI(t, login)
	b := browser.Start(t, op.Certificate(), e.http.Certificate())
	live := func() {
		require.Eventually(t, func() bool { return b.TextNow(`#live`) == "Live updates: on" }, 20*time.Second, 100*time.Millisecond,
			"the live stream did not connect")
	}

	b.Do(t, chromedp.Navigate(e.http.URL+"/"), browser.OIDCLogin("alice", "alice-password"),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/fleet/alpha"]`)))
	b.Follow(t, `a[href="/fleet/alpha"]`, `#fleet`)
	live()
	assert.Contains(t, b.TextNow(`[id="d/alpha/dev-a2"]`), "solar fleet repair a2 --reason")
	assert.Equal(t, "none", b.TextNow(`[id="d/alpha/dev-a3"] [data-field="state"]`))
	b.Screenshot(t, "fleet")

	e.put(t, "state.a3", `{"state":"committed","version":"1.1.0","running":"1.1.0"}`)
	require.Eventually(t, func() bool {
		return b.TextNow(`[id="d/alpha/dev-a3"] [data-field="state"]`) == "committed"
	}, 20*time.Second, 100*time.Millisecond, "the page did not show the device's new state without a reload")
	assert.Contains(t, b.TextNow(`[id="f/alpha"]`), "committed: 2")
	assert.Equal(t, "1.1.0", b.TextNow(`[id="d/alpha/dev-a3"] [data-field="running"]`))
	e.device(t, "alpha", "dev-a5", "a5", map[string]string{"ring": "late"})
	require.Eventually(t, func() bool {
		return b.TextNow(`[id="d/alpha/dev-a5"] [data-field="labels"]`) == "ring=late"
	}, 20*time.Second, 100*time.Millisecond, "a new Device did not appear without a reload")
	b.Screenshot(t, "fleet-live")

	b.Do(t, chromedp.Navigate(e.http.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`a[href="/fleet/alpha"]`)))
	live()
	e.put(t, "state.a5", `{"state":"rollback-failed"}`)
	require.Eventually(t, func() bool {
		// a5 moved from none to rollback-failed
		return strings.Join(strings.Fields(b.TextNow(`[id="f/alpha"]`)), " ") == "committed: 2 rollback-failed: 2"
	}, 20*time.Second, 100*time.Millisecond, "the overview's counts did not follow: %q", b.TextNow(`[id="f/alpha"]`))
	b.Screenshot(t, "overview-fleet")
}
