package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/renderer/fleetkv"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/sitereport"
	"github.com/solar-pipeline/solar/ui"
)

const uiLong = `ui serves a page set for operators: every Target's state (what
solar status says: desired bootstrap and releases against the Target's
report), each rollout's waves and members, kept live by one watch of the
SolAr API server and pushed to the browsers as server-sent events.

Users log in with OpenID Connect (--oidc-issuer, the authorization code flow
with PKCE); what a page and the live stream show, and which rollout buttons
(pause, resume, approve, abort) act, is what the user's own Kubernetes RBAC
on the SolAr API server allows (SubjectAccessReviews: get targets and
targetreports, get and update rollouts, or deviceupgrades for a
DeviceUpgrade's rollout, in each namespace). The UI's own account (--kubeconfig)
needs list and watch of Targets, TargetReports, Rollouts and DeviceUpgrades
(a DeviceUpgrade's rollout is listed with the Rollouts), and of Devices with
--nats, and create of SubjectAccessReviews; nothing else, and no Secret.

With --nats (and the login flags of solar fleet status) the pages show the
device fleet too: each namespace's Devices with the attempt and the state
the fleet's bucket holds for them (solar fleet status's), by state on the
overview, kept live by one watch of the bucket; a user needs get devices in
the namespace. Without --nats the fleet page and its counts are absent.

With --verify-key (repeatable), a Target's page shows the signature check:
whether its newest bootstrap chart and the release charts it names carry a
signature that one of the keys verifies, as Flux's OCIRepository verify
decides with the keys bootstrap-manifests --verify-key gave it.

It serves HTTPS with --tls-cert and --tls-key; without them plain HTTP on a
loopback address only (the session cookie is Secure: put a TLS proxy in
front elsewhere).

With --reports DIR (solar import-reports' folder), a Target an air-gapped
site's imported archive reports is shown from there, marked with the site
and when its archive left it; an import is seen at the next refresh.`

// uiFlags are solar ui's own flags.
type uiFlags struct {
	listen, tlsCert, tlsKey, kubeconfig string
	issuer, clientID, secretFile        string
	redirect, caFile                    string
	usernameClaim, groupsClaim          string
	usernamePrefix, groupsPrefix        string
	refresh                             time.Duration
	verifyKeys                          []string
	reports                             string
	// nats is the fleet's bucket, named as solar fleet status names it.
	nats natsFlags
}

func (f *uiFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8443", "address to serve on")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "PEM certificate to serve HTTPS with")
	fl.StringVar(&f.tlsKey, "tls-key", "", "PEM key of --tls-cert")
	fl.StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the SolAr API server (default $KUBECONFIG; in a Pod, its ServiceAccount)")
	fl.StringVar(&f.issuer, "oidc-issuer", "", "issuer URL of the OpenID provider users log in with")
	fl.StringVar(&f.clientID, "oidc-client-id", "", "the UI's client id at the provider")
	fl.StringVar(&f.secretFile, "oidc-client-secret-file", "", "file holding the client's secret (never an argument)")
	fl.StringVar(&f.redirect, "oidc-redirect-url", "", "URL the provider sends the browser back to (default https://LISTEN/auth/callback)")
	fl.StringVar(&f.caFile, "oidc-ca-file", "", "PEM of CA certificates to trust for the provider, besides the system's")
	fl.StringVar(&f.usernameClaim, "oidc-username-claim", "sub", "ID token claim naming the Kubernetes user, as the API server's --oidc-username-claim")
	fl.StringVar(&f.usernamePrefix, "oidc-username-prefix", "", `prefix of the user name, as the API server's: "-" for none; unset, the issuer and "#" (but for the email claim)`)
	fl.StringVar(&f.groupsClaim, "oidc-groups-claim", "groups", "ID token claim naming the user's groups, as the API server's --oidc-groups-claim")
	fl.StringVar(&f.groupsPrefix, "oidc-groups-prefix", "", "prefix of the groups, as the API server's --oidc-groups-prefix")
	fl.DurationVar(&f.refresh, "refresh", 30*time.Second, "how often every status and rollout is read again from the registry")
	fl.StringVar(&f.reports, "reports", "", reportsFlagHelp+" (read again when an import changed it, at the next refresh)")
	fl.StringArrayVar(&f.verifyKeys, "verify-key", nil, "public key (PEM) the Target page checks the charts' signatures with, as Flux does with bootstrap-manifests --verify-key; repeatable, for a key rotation")
	f.nats.register(fl)
}

// fleet is the fleet's bucket of the flags; nil without --nats (and
// $NATS_URL): no fleet page.
func (f *uiFlags) fleet(g *globals) *fleetkv.NATS {
	if f.nats.server == "" {
		return nil
	}
	n := f.nats.nats(g)
	return &n
}

// oidc are the login options of the flags.
func (f *uiFlags) oidc() (*ui.OIDCOptions, error) {
	if f.issuer == "" {
		return nil, errors.New("--oidc-issuer is required: users log in with OpenID Connect")
	}
	secret, err := os.ReadFile(f.secretFile)
	if err != nil {
		return nil, fmt.Errorf("--oidc-client-secret-file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if f.caFile != "" {
		pem, err := os.ReadFile(f.caFile)
		if err != nil || !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--oidc-ca-file %s: no PEM certificate read (%v)", f.caFile, err)
		}
	}
	redirect := f.redirect
	if host, _, err := net.SplitHostPort(f.listen); redirect == "" && (err != nil || host == "" || f.tlsCert == "") {
		return nil, errors.New("--oidc-redirect-url is required unless --listen names a host and --tls-cert is given: the URL the provider sends the browser back to")
	} else if redirect == "" {
		redirect = "https://" + f.listen + "/auth/callback"
	}
	if len(strings.TrimSpace(string(secret))) == 0 {
		return nil, fmt.Errorf("--oidc-client-secret-file %s is empty", f.secretFile)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	return &ui.OIDCOptions{Issuer: f.issuer, ClientID: f.clientID, ClientSecret: strings.TrimSpace(string(secret)), RedirectURL: redirect,
		UsernameClaim: f.usernameClaim, UsernamePrefix: f.usernamePrefix, GroupsClaim: f.groupsClaim, GroupsPrefix: f.groupsPrefix,
		HTTPClient: client}, nil
}

func newUICmd(g *globals) *cobra.Command {
	var f uiFlags
	var rf registryFlags
	cmd := &cobra.Command{
		Use:   "ui --registry HOST[:PORT][/PREFIX] --oidc-issuer URL --oidc-client-id ID --oidc-client-secret-file FILE",
		Short: "Serve live pages of every Target's state and each rollout, with OIDC login and the user's own RBAC",
		Long:  uiLong,
		Example: `  solar ui --registry registry.example.com/solar --kubeconfig solar.yaml --tls-cert ui.pem --tls-key ui-key.pem \
    --listen :8443 --oidc-issuer https://login.example.com --oidc-client-id solar-ui --oidc-client-secret-file ui-secret`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runUI(cmd, g, &f, &rf)
		},
	}
	rf.registerClient(g, cmd.Flags(), "solar published to")
	f.register(cmd)
	return cmd
}

func runUI(cmd *cobra.Command, g *globals, f *uiFlags, rf *registryFlags) error {
	ctx := cmd.Context()
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	if f.tlsCert == "" {
		if host, _, err := net.SplitHostPort(f.listen); err != nil || !net.ParseIP(host).IsLoopback() {
			return fmt.Errorf("--listen %s without --tls-cert: plain HTTP only on a loopback address", f.listen)
		}
	}
	login, err := f.oidc()
	if err != nil {
		return err
	}
	keys, err := uiVerifyKeys(f.verifyKeys)
	if err != nil {
		return err
	}
	if rf.registry == "" {
		return errors.New("--registry is required: the registry solar published to")
	}
	remote, err := rf.remote(ctx, cmd.InOrStdin())
	if err != nil {
		return err
	}
	defer remote.Close()
	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	opts := ui.Options{Config: cfg, Store: remote.Store, OIDC: login, Refresh: f.refresh, Settle: pipeline.DefaultSettle,
		Fleet: f.fleet(g), VerifyKeys: keys, Log: g.log}
	if f.reports != "" {
		live, err := sitereport.NewLive(f.reports, f.refresh)
		if err != nil {
			return err
		}
		opts.ImportedReports = live.Report
	}
	s, err := ui.New(opts)
	if err != nil {
		return err
	}
	return serveUI(ctx, g, s, f)
}

// uiVerifyKeys reads --verify-key's files as bootstrap-manifests does
// (readPublicKeys), each named by its file.
func uiVerifyKeys(files []string) ([]ui.VerifyKey, error) {
	pems, err := readPublicKeys(files)
	if err != nil {
		return nil, err
	}
	keys := make([]ui.VerifyKey, len(files))
	for i, name := range files {
		keys[i] = ui.VerifyKey{Name: name, PEM: pems[i]}
	}
	return keys, nil
}

// serveUI runs s until ctx ends.
func serveUI(ctx context.Context, g *globals, s *ui.Server, f *uiFlags) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx); cancel() }() // a login that cannot start ends the server
	srv := &http.Server{Addr: f.listen, Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		IdleTimeout: 2 * time.Minute}
	go func() {
		<-ctx.Done()
		shut, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		_ = srv.Shutdown(shut)
	}()
	g.say("serving on %s", f.listen)
	var err error
	if f.tlsCert != "" {
		err = srv.ListenAndServeTLS(f.tlsCert, f.tlsKey)
	} else {
		err = srv.ListenAndServe()
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	cancel()
	return errors.Join(err, <-ran)
}
