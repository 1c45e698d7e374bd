package ui

import (
	_ "embed"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/browser"
)

// audit.js checks what the issue asks of every page (accessible: keyboard,
// contrast, text for every colour; readable on a narrow screen) and returns
// the problems it found.
//
//go:embed testdata/audit.js
var auditJS string

// focusJS describes the focused element and its focus ring's contrast
// against what is behind it.
const focusJS = `(() => {
  const el = document.activeElement;
  if (!el || el === document.body) return {what: "", ratio: 0, outline: "none"};
  const cs = getComputedStyle(el);
  return {what: el.tagName + " " + (el.getAttribute("href") || el.textContent.trim()),
    ratio: window.solarAudit.contrast(cs.outlineColor, window.solarAudit.background(el.parentElement)),
    outline: cs.outlineStyle};
})()`

// focused is what focusJS returns.
type focused struct {
	What    string  `json:"what"`
	Ratio   float64 `json:"ratio"`
	Outline string  `json:"outline"`
}

// TestPagesAccessible (issue 51): on a 360 px wide screen, in a real
// Chromium, the overview, a namespace, a Target and a rollout page scroll
// only inside their tables (never the page sideways); every text has a
// contrast of 4.5:1 to its background (3:1 when large), every coloured
// state says its state in words, every control has a name; and the
// keyboard alone reaches every link and button of the rollout page, in
// order, each with a visible focus ring of 3:1 to what is behind it.
func TestPagesAccessible(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real API server, an OpenID provider and Chromium")
	}
	op, login := aliceOIDC(t)
	e := startUI(t, login)
	b := browser.Start(t, op.Certificate(), e.http.Certificate())
	b.Do(t, chromedp.EmulateViewport(360, 740), chromedp.Navigate(e.http.URL+"/"), browser.OIDCLogin("alice", "alice-password"),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/targets/alpha/alpha-edge"]`)))

	for name, page := range map[string]string{"overview": "/", "namespace": "/namespaces/alpha", "target": "/targets/alpha/alpha-edge",
		"rollout": "/rollouts/alpha/web"} {
		b.Do(t, chromedp.Navigate(e.http.URL+page), chromedp.WaitVisible(chromedp.CSS(`main h1`)))
		problems := browser.Run(t, b, chromedp.Evaluate[[]string](auditJS))
		assert.Empty(t, problems, "%s", page)
		b.Screenshot(t, "narrow-"+name)
	}
	b.Do(t, chromedp.Navigate(e.http.URL+"/rollouts/alpha/web"), chromedp.WaitVisible(chromedp.CSS(`main h1`)))
	browser.Run(t, b, chromedp.Evaluate[[]string](auditJS)) // its helpers, for focusJS

	// The rollout page by keyboard: Tab from the top reaches every control.
	controls := browser.Run(t, b, chromedp.Evaluate[[]string](`[...document.querySelectorAll("a[href], button")].map((el) =>
  el.tagName + " " + (el.getAttribute("href") || el.textContent.trim()))`))
	require.NotEmpty(t, controls)
	var reached []string
	for range controls {
		b.Do(t, chromedp.KeyEvent(kb.Tab))
		f := browser.Run(t, b, chromedp.Evaluate[focused](focusJS))
		reached = append(reached, f.What)
		assert.NotEqual(t, "none", f.Outline, "%s shows no focus ring", f.What)
		assert.GreaterOrEqual(t, f.Ratio, 3.0, "%s: the focus ring's contrast", f.What)
	}
	assert.Equal(t, controls, reached, "Tab reaches every control, in the page's order")
	b.Screenshot(t, fmt.Sprintf("narrow-focus-%d", len(reached)))
}
