package browser

import (
	"context"

	"github.com/chromedp/chromedp"
)

// OIDCLogin fills the login form of the test OpenID Provider
// (testenv.StartOIDC) on the page the tab shows and submits it: it waits
// for the form, replaces the user name, types the password and clicks the
// button. What comes next is the test's: the application's page after a
// good password, the form again with its error (ErrorSelector) after a
// wrong one.
func OIDCLogin(username, password string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.WaitVisible(chromedp.CSS(`#username`)),
		// Empty the user name the form kept after a failed attempt
		// (chromedp's SetValue cannot set "").
		func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Evaluate[bool](`(document.getElementById("username").value = "", true)`)(ctx, t)
			return chromedp.Void{}, err
		},
		chromedp.SendKeys(chromedp.CSS(`#username`), username),
		chromedp.SendKeys(chromedp.CSS(`#password`), password),
		chromedp.Click(chromedp.CSS(`#login`)),
	)
}

// ErrorSelector is the test OpenID Provider's message after a wrong user
// name or password ("wrong user name or password"), above the form.
const ErrorSelector = chromedp.CSS(`#error`)
