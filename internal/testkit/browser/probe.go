package browser

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
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
