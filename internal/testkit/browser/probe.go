package browser

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// probeTimeout bounds one probe: a page that is loading answers nothing.
const probeTimeout = 2 * time.Second

// Now runs a in the tab and returns its value, or false when it cannot
// now (the page is loading, the element is not there yet): a probe to poll
// with require.Eventually, which fails nothing.
func Now[T any](b *Browser, a chromedp.Action[T]) (T, bool) {
	ctx, cancel := context.WithTimeout(b.tab, probeTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	return v, err == nil
}

// TextNow is the text of the element sel selects now as it is rendered
// (innerText: block elements apart), trimmed, "" while there is none.
func (b *Browser) TextNow(sel string) string {
	v, _ := Now(b, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).innerText || ""`, sel)))
	return strings.TrimSpace(v)
}

// Has says whether the page has an element sel selects now.
func (b *Browser) Has(sel string) bool {
	v, _ := Now(b, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q) !== null`, sel)))
	return v
}

// Follow clicks the element sel selects as a user would (its click()) as
// soon as the page has it, and waits until the page has an element want
// selects: a link to another page, where chromedp's Click, which holds the
// element's node id, fails with "Could not find node with given id" when a
// live update re-rendered the element or the page changed under it. A
// click that did not take is tried again while sel is still there.
func (b *Browser) Follow(t testing.TB, sel, want string) {
	t.Helper()
	click := fmt.Sprintf(`(function (e) { if (!e) { return false }; e.click(); return true })(document.querySelector(%q))`, sel)
	require.Eventually(t, func() bool {
		if b.Has(want) {
			return true
		}
		Now(b, chromedp.Evaluate[bool](click))
		return false
	}, b.Timeout, 200*time.Millisecond, "clicking %s did not lead to a page with %s", sel, want)
}
