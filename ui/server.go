// Package ui is solar ui: a page set for operators, served from
// the same library calls the CLI makes (renderer/status for each Target,
// renderer/rolloutstore for each rollout), kept live by one watch of the
// SolAr API server however many browsers are open, pushed to the browsers
// as server-sent events. Users log in with OpenID Connect; their own
// Kubernetes RBAC on the SolAr API server (asked with SubjectAccessReviews)
// decides what a page and the live stream show and which buttons act.
// Pages are html/template, with one small script and no build step.
package ui

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/solar-pipeline/solar/renderer/fleetkv"
	"github.com/solar-pipeline/solar/renderer/store"
)

// Options configure the page set.
type Options struct {
	// Config is the UI's own connection to the SolAr API server: it watches
	// Targets, TargetReports, Rollouts, DeviceUpgrades (and Devices with
	// Fleet) and asks SubjectAccessReviews.
	Config *rest.Config
	// Store is where solar published (the registry, or a layout).
	Store store.Store
	// OIDC is the login (nil: no login is possible, every page refuses).
	OIDC *OIDCOptions
	// Refresh is how often every status and rollout is read again from the
	// store (default 30s); a change of a Target or its report in the API
	// server is seen at once.
	Refresh time.Duration
	// SessionTTL is how long a login lasts (default 8h); AccessTTL how long
	// an answer of RBAC is kept (default 30s).
	SessionTTL, AccessTTL time.Duration
	// Settle is the rollout verbs' (rolloutstore.Options.Settle).
	Settle time.Duration
	// Fleet is the fleet's NATS bucket (solar fleet status's): with it,
	// the pages show each Device's attempt and state (nil: no fleet page).
	Fleet *fleetkv.NATS
	Log   *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	// VerifyKeys are the public keys the Target page's signature check
	// trusts (solar ui --verify-key); none: the page says no key was given.
	VerifyKeys []VerifyKey

	// ImportedReports, when set, reads the TargetReports imported from
	// air-gapped sites' report archives (sitereport.Live.Report): a Target
	// one reports is shown from there (status.Options.Imported), marked
	// with its site; an import is seen at the next refresh.
	ImportedReports func(ctx context.Context, ns, name string) (*unstructured.Unstructured, error)
}

// Server serves the pages; Run starts its watch.
type Server struct {
	opts     Options
	model    *model
	access   *access
	sessions *sessions
	sigs     *signatures
	login    atomic.Pointer[login]
	ready    chan struct{}
	fleet    *fleetView
}

// New prepares the server; it contacts neither the API server nor the
// provider until Run (the provider's discovery is read there).
func New(opts Options) (*Server, error) {
	if opts.Config == nil || opts.Store == nil {
		return nil, errors.New("ui: Config and Store are required")
	}
	if opts.Refresh == 0 {
		opts.Refresh = 30 * time.Second
	}
	if opts.SessionTTL == 0 {
		opts.SessionTTL = 8 * time.Hour
	}
	if opts.AccessTTL == 0 {
		opts.AccessTTL = 30 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.Config = rest.CopyConfig(opts.Config)
	if opts.Config.QPS == 0 { // client-go's 5 would queue a burst of RBAC questions
		opts.Config.QPS, opts.Config.Burst = 50, 100
	}
	dyn, err := dynamic.NewForConfig(opts.Config)
	if err != nil {
		return nil, err
	}
	kc, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, err
	}
	sigs, err := newSignatures(opts.Store, opts.VerifyKeys, opts.Now)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, model: newModel(dyn, opts.Store, opts.Refresh, opts.Log, opts.ImportedReports),
		access:   newAccess(kc, opts.AccessTTL, opts.Now),
		sessions: newSessions(opts.SessionTTL, opts.Now), sigs: sigs, ready: make(chan struct{})}
	s.fleet = newFleetView(dyn, opts.Fleet, s.model, opts.Log)
	return s, nil
}

// Run reads the provider's discovery and watches the API server until ctx
// ends.
func (s *Server) Run(ctx context.Context) error {
	if s.opts.OIDC != nil {
		l, err := newLogin(ctx, *s.opts.OIDC, s.sessions)
		if err != nil {
			return err
		}
		s.login.Store(l)
	}
	s.fleet.start(ctx)
	s.model.run(ctx, s.ready)
	return nil
}

// Ready is closed once the watch's caches are filled and every status
// computed once.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Handler is the page set, behind its security headers.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", s.handleLogin)
	mux.HandleFunc("GET /auth/callback", s.handleCallback)
	mux.HandleFunc("POST /logout", s.user(s.handleLogout))
	mux.HandleFunc("GET /{$}", s.user(s.handleOverview))
	mux.HandleFunc("GET /namespaces/{ns}", s.user(s.handleNamespace))
	mux.HandleFunc("GET /targets/{ns}/{name}", s.user(s.handleTarget))
	mux.HandleFunc("GET /rollouts/{ns}/{name}", s.user(s.handleRollout))
	mux.HandleFunc("POST /rollouts/{ns}/{name}/{verb}", s.user(s.handleRolloutVerb))
	mux.HandleFunc("GET /fleet/{ns}", s.user(s.handleFleet))
	mux.HandleFunc("GET /events", s.user(s.handleEvents))
	mux.Handle("GET /static/", http.FileServerFS(static))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	return secure(mux)
}

// secure sets the headers every answer carries: no script, style or frame
// from elsewhere, no inline script, no framing, no sniffing, no referrer,
// nothing cached.
func secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "+
			"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-store")
		hd.Set("Strict-Transport-Security", "max-age=31536000")
		h.ServeHTTP(w, r)
	})
}

// user runs h with the request's session; without one a page redirects to
// the login and anything else is refused.
func (s *Server) user(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		se := s.sessions.of(r)
		if se == nil {
			if r.Method == http.MethodGet && r.URL.Path != "/events" {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			http.Error(w, "not logged in", http.StatusUnauthorized)
			return
		}
		h(w, r, se)
	}
}
