package browser_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"html"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zitadel/oidc/v3/pkg/client/rp"
	httphelper "github.com/zitadel/oidc/v3/pkg/http"
	"github.com/zitadel/oidc/v3/pkg/oidc"

	"github.com/solar-pipeline/solar/internal/testkit/browser"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// startApp is a tiny relying party of o over HTTPS, as Solar's UI will be
// one: /login sends the browser to the provider (with state and PKCE in
// cookies), /callback exchanges the code and says hello to the user by the
// ID token's preferred_username.
func startApp(t *testing.T, o *testenv.OIDC) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	base := "https://" + srv.Listener.Addr().String()
	clientID, secret := o.AddClient(t, base+"/callback")
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	cookies := httphelper.NewCookieHandler(key, key)
	party, err := rp.NewRelyingPartyOIDC(t.Context(), o.Issuer, clientID, secret, base+"/callback",
		[]string{oidc.ScopeOpenID, oidc.ScopeProfile, oidc.ScopeEmail}, rp.WithHTTPClient(o.HTTPClient()), rp.WithPKCE(cookies))
	require.NoError(t, err)

	mux := http.NewServeMux()
	mux.Handle("/login", rp.AuthURLHandler(uuid.NewString, party))
	mux.Handle("/callback", rp.CodeExchangeHandler(func(w http.ResponseWriter, _ *http.Request,
		tokens *oidc.Tokens[*oidc.IDTokenClaims], _ string, _ rp.RelyingParty) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!DOCTYPE html><html lang="en"><head><title>The app</title></head>`+
			`<body><h1 id="hello">hello %s</h1></body></html>`, html.EscapeString(tokens.IDTokenClaims.PreferredUsername))
	}, party))
	srv.Config.Handler = mux
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// TestBrowserOIDCLogin logs in to an application through the test OpenID
// Provider's form in Chromium: a wrong password shows the form again with
// its error, the right one lands on the application's page, which knows the
// user's name.
func TestBrowserOIDCLogin(t *testing.T) {
	o := testenv.StartOIDC(t)
	o.AddUser(t, "alice", "correct horse", "operators")
	app := startApp(t, o)

	b := browser.Start(t, o.Certificate(), app.Certificate())
	flow := time.Now()
	b.Do(t, chromedp.Navigate(app.URL+"/login"), browser.OIDCLogin("alice", "wrong"),
		chromedp.WaitVisible(browser.ErrorSelector))
	assert.Equal(t, "wrong user name or password", browser.Run(t, b, chromedp.Text(browser.ErrorSelector)))
	assert.True(t, strings.HasPrefix(browser.Run(t, b, chromedp.Location()), o.Issuer+"/login"),
		"the form again, on the provider")
	assert.Equal(t, "alice", browser.Run(t, b, chromedp.Value(chromedp.CSS(`#username`))), "the user name kept")
	assert.Empty(t, browser.Run(t, b, chromedp.Value(chromedp.CSS(`#password`))), "the password not")
	wrong := b.Screenshot(t, "wrong-password")

	b.Do(t, browser.OIDCLogin("alice", "correct horse"), chromedp.WaitVisible(chromedp.CSS(`#hello`)))
	assert.Equal(t, "hello alice", browser.Run(t, b, chromedp.Text(chromedp.CSS(`#hello`))))
	assert.True(t, strings.HasPrefix(browser.Run(t, b, chromedp.Location()), app.URL+"/callback?"))
	flowTook := time.Since(flow)
	hello := b.Screenshot(t, "logged-in")

	for _, p := range []string{wrong, hello} {
		assert.Equal(t, b.Artifacts, filepath.Dir(p))
		png, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(png), "\x89PNG"), "%s is a PNG", p)
	}
	t.Logf("chromium started in %v; the login flow (two form posts, the code exchange) took %v; screenshots in %s",
		b.Started.Round(time.Millisecond), flowTook.Round(time.Millisecond), b.Artifacts)
}

// TestBrowserRefusesUntrusted: a certificate the test did not name fails the
// page (Chromium's interstitial), it is not ignored.
func TestBrowserRefusesUntrusted(t *testing.T) {
	o := testenv.StartOIDC(t)
	app := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `<!DOCTYPE html><title>trusted</title><p id="ok">ok</p>`)
	}))
	app.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes Chromium refuses
	app.StartTLS()
	t.Cleanup(app.Close)
	b := browser.Start(t, o.Certificate())
	ctx, cancel := context.WithTimeout(b.Context(), 20*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Navigate(app.URL))
	require.Error(t, err, "the app's certificate is not trusted")
	assert.Contains(t, err.Error(), "ERR_CERT")
}

// fatalTB records the first Fatalf and ends the goroutine, as testing.T
// does: for a test that expects Start to fail.
type fatalTB struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.msg = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

// TestStartWithoutChromium: no chromium fails the test (not a skip) and
// says how to install it.
func TestStartWithoutChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: Start skips")
	}
	t.Setenv("PATH", t.TempDir())
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		browser.Start(f)
	}()
	<-done
	assert.Contains(t, f.msg, "install it: scripts/install-browser.sh")
}
