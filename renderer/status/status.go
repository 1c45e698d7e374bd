package status

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/published"
	"github.com/solar-pipeline/solar/renderer/store"
	"github.com/solar-pipeline/solar/renderer/targetreport"
)

// The states of a Target in solar status, from best to worst.
const (
	// Converged: every release the newest bootstrap chart names is Ready at
	// the version published, from the artifact published where the report
	// says which (helm-controller's digest suffix), in a fresh report.
	Converged = "Converged"
	// Progressing: Flux is on its way (a release not yet Ready, or not yet
	// at the version or artifact published, none failed).
	Progressing = "Progressing"
	// Failed: a release is Failed (retries spent), or Degraded with no retry
	// coming (helm-controller retrying is Progressing).
	Failed = "Failed"
	// Stale: the report is older than the maximum age: the agent stopped.
	Stale = "Stale"
	// Unknown: nothing published for the Target, or no report.
	Unknown = "Unknown"
)

// DefaultMaxAge is the age past which a report is stale: solar-agent's
// heartbeat (its --max-age, 10 intervals of 1 minute), plus one interval it
// may take to notice, plus margin.
const DefaultMaxAge = 15 * time.Minute

// maxSkew is how far in the future a report may be dated (the agent's
// clock ahead of solar's) before it is not believed.
const maxSkew = time.Minute

// Options say where the reports are and when one is stale.
type Options struct {
	// Kubeconfig is the kubeconfig of the SolAr API server; RESTConfig,
	// when set, its connection instead (the controller's).
	Kubeconfig string
	RESTConfig *rest.Config
	// WrapTransport, when set, wraps the HTTP transport of its connection
	// (solar --debug logs every request).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// MaxAge is the age past which a report is stale (0: DefaultMaxAge).
	MaxAge time.Duration
	// Now is the time reports are aged against (zero: time.Now).
	Now time.Time
	// Report, when set, reads a Target's TargetReport instead of a request
	// (an informer's cache: solar ui); it answers a missing one with the
	// API's NotFound error.
	Report func(ctx context.Context, ns, name string) (*unstructured.Unstructured, error)
	// Imported, when set, reads the TargetReports imported from sites'
	// report archives (sitereport.Reports.Report): a Target it reports is
	// read there, any other from the API server (Report, Kubeconfig or
	// RESTConfig; with none of them, it has no report).
	Imported func(ctx context.Context, ns, name string) (*unstructured.Unstructured, error)
}

// Target compares what was published for a Target with what its
// agent reported.
type Target struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	State     string `json:"state"`
	// Bootstrap is the newest bootstrap chart version in the store.
	Bootstrap string `json:"bootstrap,omitempty"`
	// LastReportTime and Age say when the agent last reported.
	LastReportTime *time.Time `json:"lastReportTime,omitempty"`
	Age            string     `json:"age,omitempty"`
	// Site and ExportedAt, for a report imported from a site's report
	// archive (solar import-reports), name the site and when the archive
	// left it: the report's age (and so Stale) is judged at that time.
	Site       string     `json:"site,omitempty"`
	ExportedAt *time.Time `json:"exportedAt,omitempty"`
	// Message says why the state is not Converged.
	Message  string    `json:"message,omitempty"`
	Releases []Release `json:"releases"`
}

// Release is one release: published (Desired) and reported.
type Release struct {
	// Release is the SolAr Release, <namespace>/<name>.
	Release string `json:"release"`
	// Desired is the release chart version the newest bootstrap chart names,
	// and DesiredDigest the manifest digest of that version in the store:
	// the artifact Flux pulls ("" when the store does not have it).
	Desired       string `json:"desired"`
	DesiredDigest string `json:"desiredDigest,omitempty"`
	// Reported is the release chart version the cluster runs, as the agent
	// reports it, and Phase what Flux says of it; empty when the report
	// does not name it.
	Reported string `json:"reported,omitempty"`
	Phase    string `json:"phase,omitempty"`
	// ReportedDigest is the start of the manifest digest the cluster
	// installed: the 12 hex digits helm-controller appends to a chart's
	// version (0.0.1+68ee5879e98f); empty when Reported has none.
	ReportedDigest string `json:"reportedDigest,omitempty"`
	// Message is the failing condition's message, else why the release
	// is not the one published at its version (another artifact).
	Message string `json:"message,omitempty"`
}

// Of compares, for every Target of the set that opts select, the
// newest bootstrap chart in store (its release chart versions) with the
// Target's TargetReport in the API server.
func Of(ctx context.Context, targets []load.ID, store store.Store, so Options) ([]Target, error) {
	if so.Report == nil && (so.Kubeconfig != "" || so.RESTConfig != nil || so.Imported == nil) {
		cfg := so.RESTConfig
		if cfg == nil {
			var err error
			if cfg, err = clientcmd.BuildConfigFromFlags("", so.Kubeconfig); err != nil {
				return nil, fmt.Errorf("reading the kubeconfig %s: %w", so.Kubeconfig, err)
			}
			cfg.Wrap(so.WrapTransport)
		}
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		so.Report = func(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
			return dyn.Resource(kube.TargetReportGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		}
	}
	so.Report = importedFirst(so.Imported, so.Report)
	if so.MaxAge == 0 {
		so.MaxAge = DefaultMaxAge
	}
	if so.Now.IsZero() {
		so.Now = time.Now()
	}
	out := make([]Target, 0, len(targets))
	digests := &chartDigests{store: store, known: map[published.Ref]string{}}
	for _, t := range targets {
		st, err := targetStatus(ctx, t, digests, so)
		if err != nil {
			return out, err
		}
		out = append(out, st)
	}
	return out, nil
}

// targetStatus is one Target's status.
func targetStatus(ctx context.Context, t load.ID, digests *chartDigests, so Options) (Target, error) {
	st := Target{Namespace: t.Namespace, Name: t.Name, State: Unknown, Releases: []Release{}}
	desired, err := desiredReleases(ctx, digests, t, &st)
	if err != nil || desired == nil {
		return st, err
	}
	st.Releases = desired
	u, err := so.Report(ctx, t.Namespace, t.Name)
	if apierrors.IsNotFound(err) {
		st.Message = "no TargetReport: its credential was never minted (solar credentials sync)"
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("reading the TargetReport of %s/%s: %w", t.Namespace, t.Name, err)
	}
	if err := viaArchive(&st, u, &so); err != nil {
		return st, fmt.Errorf("the TargetReport of %s/%s: %w", t.Namespace, t.Name, err)
	}
	compare(&st, targetreport.Decode(u.Object), so)
	if st.Site != "" {
		note := fmt.Sprintf("reported via the archive of site %s, exported at %s", st.Site, st.ExportedAt.Format(time.RFC3339))
		st.Message = strings.Join(slices.DeleteFunc([]string{note, st.Message}, func(s string) bool { return s == "" }), "; ")
	}
	return st, nil
}

// desiredReleases reads the newest bootstrap chart of t: its version into
// st.Bootstrap and its releases, each with its manifest digest in the store
// digests reads; nil when nothing is published.
func desiredReleases(ctx context.Context, digests *chartDigests, t load.ID, st *Target) ([]Release, error) {
	repo, err := digests.store.Repository(ctx, chain.BootstrapRepository(t.Namespace, t.Name))
	if err != nil {
		return nil, err
	}
	newest, err := publish.Newest(ctx, repo)
	if err != nil {
		return nil, fmt.Errorf("reading the bootstrap chart of %s/%s: %w", t.Namespace, t.Name, store.Explain(err))
	}
	if newest == "" {
		st.Message = "nothing published for it"
		return nil, nil
	}
	st.Bootstrap = newest
	refs, err := published.BootstrapRefs(ctx, repo, newest)
	if err != nil {
		return nil, fmt.Errorf("reading the bootstrap chart %s/%s:%s: %w", t.Namespace, t.Name, newest, err)
	}
	out := []Release{}
	for _, r := range refs {
		d, err := digests.of(ctx, t.Namespace, r)
		if err != nil {
			return nil, fmt.Errorf("reading the release chart %s of %s/%s: %w", r.URL, t.Namespace, t.Name, err)
		}
		out = append(out, Release{Release: r.Release, Desired: r.Version, DesiredDigest: d})
	}
	return out, nil
}

// compare fills st from the report: each release's reported version and
// phase, the report's age, and the Target's state.
func compare(st *Target, report targetreport.Spec, so Options) {
	if report.LastReportTime.IsZero() {
		st.Message = "the agent has not reported yet"
		return
	}
	at := report.LastReportTime.UTC()
	st.LastReportTime = &at
	age := so.Now.Sub(at).Round(time.Second)
	st.Age = age.String()
	if age < -maxSkew {
		st.Message = fmt.Sprintf("the report is dated %s in the future: the agent's clock is wrong", -age)
		return
	}
	for _, c := range report.Preflight.Checks {
		if c.Type == "FluxReadable" && c.Status != metav1.ConditionTrue {
			st.Message = "the agent cannot read Flux on its cluster: " + c.Reason + ": " + c.Message
			return
		}
	}
	reported := map[string]targetreport.Release{}
	for _, r := range report.Releases {
		reported[r.Name] = r
	}
	st.State = Converged
	var why []string
	for i := range st.Releases {
		rs := &st.Releases[i]
		relNS, name, _ := strings.Cut(rs.Release, "/")
		r, ok := reported[targetreport.ReleaseName(st.Namespace, relNS, name)]
		if !ok {
			st.State = worse(st.State, Progressing)
			why = append(why, rs.Release+": not on the cluster yet")
			continue
		}
		state, msg := compareRelease(rs, r)
		st.State = worse(st.State, state)
		if msg != "" {
			why = append(why, rs.Release+": "+msg)
		}
	}
	if age > so.MaxAge {
		st.State = Stale
		why = append([]string{fmt.Sprintf("the last report is %s old (more than %s): is the agent running?", st.Age, so.MaxAge)}, why...)
	}
	st.Message = strings.Join(why, "; ")
}

// compareRelease fills rs from the release r the report names and says
// the release's state, and why when it is not Converged and can say.
func compareRelease(rs *Release, r targetreport.Release) (state, why string) {
	rs.Reported, rs.Phase, rs.Message = r.Revision, string(r.Phase), failing(r)
	same, other := runsPublished(rs, r.Revision)
	switch {
	case r.Phase == targetreport.Degraded && waiting(r):
		return Progressing, "waiting for its dependencies: " + rs.Message
	case r.Phase == targetreport.Degraded && sourcePending(r):
		return Progressing, "waiting for its source: " + rs.Message
	case r.Phase == targetreport.Degraded && retrying(r):
		return Progressing, "retrying: " + rs.Message
	case r.Phase == targetreport.Failed || r.Phase == targetreport.Degraded:
		return Failed, string(r.Phase) + ": " + rs.Message
	case !same:
		if rs.Message == "" {
			rs.Message = other
		}
		return Progressing, other
	case r.Phase != targetreport.Ready:
		return Progressing, ""
	}
	return Converged, ""
}

var rank = map[string]int{Converged: 0, Progressing: 1, Unknown: 2, Failed: 3, Stale: 4}

func worse(a, b string) string {
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// ExitCode is what solar status --exit-code exits with: 0 when every
// Target converged, 2 while one is progressing, 1 when one failed, is
// stale, or is unknown.
func ExitCode(st []Target) int {
	code := 0
	for _, s := range st {
		switch s.State {
		case Progressing:
			code = max(code, 2)
		case Failed, Stale, Unknown:
			return 1
		}
	}
	return code
}

// Watch compares as Of does, hands each result to show, and while a Target
// is Progressing asks again after interval (with watch false, once). It
// returns the last result's ExitCode, or why it stopped (ctx done, an
// error of Of or of show).
func Watch(ctx context.Context, targets []load.ID, st store.Store, so Options, watch bool, interval time.Duration, show func([]Target) error) (int, error) {
	for {
		res, err := Of(ctx, targets, st, so)
		if err != nil {
			return 0, err
		}
		if err := show(res); err != nil {
			return 0, err
		}
		code := ExitCode(res)
		if !watch || code != 2 {
			return code, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(interval):
		}
	}
}
