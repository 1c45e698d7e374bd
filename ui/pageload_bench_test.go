package ui

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/internal/testkit/browser"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/store"
)

// BenchmarkPageLoad (issue 51, done-when 3) is the overview as a user gets
// it from solar ui, with 1,000 and 10,000 Targets (100 per namespace, each
// Converged: its bootstrap chart published in a layout, its TargetReport
// saying so): a real API server, the real Server (its watch and the
// SubjectAccessReviews it asks, as the UI's own account with
// config/ui/rbac.yaml's rules, of a user who may read every namespace),
// served over TLS, loaded by Chromium. Setup runs once per size; the loop
// is the browser's loads. Its metrics:
//
//   - s/ready: from Run until Ready (the watch filled, every status
//     computed once), and cpu-s/ready the CPU time the UI spent on it;
//   - MB/heap: the live heap the UI added, once filled and settled (after
//     a GC, against before New);
//   - ms/get-first, ms/get: GET / over TLS with the session cookie, no
//     browser: the user's first load (RBAC asked: two questions per
//     namespace), then the median of 10 more (the answers kept);
//   - ms/response-browser, ms/parsed-browser, ms/dcl-browser,
//     ms/load-browser: the median of the browser's loads (minLoads at
//     least), from its Navigation Timing (responseEnd, domInteractive,
//     domContentLoadedEventEnd, loadEventEnd, from the navigation's start);
//   - KiB/page: the page's HTML.
//
// The browser's session is made directly (a route of the test's server
// starts one, as the login callback would), not through an OpenID login.
func BenchmarkPageLoad(b *testing.B) {
	if testing.Short() {
		b.Skip("-short: runs a real etcd, kube-apiserver and Chromium")
	}
	if _, err := exec.LookPath("chromium"); err != nil {
		b.Skipf("no chromium in PATH: %s", browser.Install)
	}
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) { benchPageLoad(b, n) })
	}
}

// loginPath is the test server's route that starts alice's session and
// redirects to the overview: the browser's login.
const loginPath = "/bench-login"

// minLoads is how many loads the browser's figures are the median of, at
// least: the loop's, then more outside it.
const minLoads = 5

func benchPageLoad(b *testing.B, n int) {
	e := startPageLoadUI(b, n)
	first, get, size := e.gets(b, n)
	br := browser.Start(b, e.http.Certificate())
	br.Do(b, chromedp.Navigate(e.http.URL+loginPath), chromedp.WaitVisible(chromedp.CSS(`#namespaces`)))
	rows := browser.Run(b, br, chromedp.Evaluate[int](`document.querySelectorAll("#namespaces ~ div tbody tr").length`))
	require.Equal(b, n/100, rows, "the browser's overview lists every namespace")
	var loads []navTiming
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		br.Do(b, chromedp.Navigate("about:blank"))
		b.StartTimer()
		loads = append(loads, browserLoad(b, br, e.http.URL+"/"))
	}
	for len(loads) < minLoads { // make bench's 1 s is one load of 10,000
		br.Do(b, chromedp.Navigate("about:blank"))
		loads = append(loads, browserLoad(b, br, e.http.URL+"/"))
	}
	var nsLoads []navTiming // a namespace's page: its 100 Targets
	for range minLoads {
		br.Do(b, chromedp.Navigate("about:blank"))
		nsLoads = append(nsLoads, browserLoad(b, br, e.http.URL+"/namespaces/team-000"))
	}
	for i, l := range loads {
		b.Logf("targets=%d load %d: response %.0f ms, parsed %.0f ms, DOMContentLoaded %.0f ms, load %.0f ms, %d bytes; %s", n, i+1,
			l.Response, l.Parsed, l.DCL, l.Load, l.Size, strings.Join(l.Resources, ", "))
	}
	b.ReportMetric(e.ready.Seconds(), "s/ready")
	b.ReportMetric(e.readyCPU.Seconds(), "cpu-s/ready")
	b.ReportMetric(float64(e.heap)/1e6, "MB/heap")
	b.ReportMetric(ms(first), "ms/get-first")
	b.ReportMetric(ms(get), "ms/get")
	b.ReportMetric(median(loads, func(l navTiming) float64 { return l.Response }), "ms/response-browser")
	b.ReportMetric(median(loads, func(l navTiming) float64 { return l.Parsed }), "ms/parsed-browser")
	b.ReportMetric(median(loads, func(l navTiming) float64 { return l.DCL }), "ms/dcl-browser")
	b.ReportMetric(median(loads, func(l navTiming) float64 { return l.Load }), "ms/load-browser")
	b.ReportMetric(float64(size)/1024, "KiB/page")
	b.ReportMetric(median(nsLoads, func(l navTiming) float64 { return l.Load }), "ms/load-browser-ns")
	b.ReportMetric(float64(nsLoads[0].Size)/1024, "KiB/page-ns")
}

// pageLoadEnv is the UI of BenchmarkPageLoad, filled and settled.
type pageLoadEnv struct {
	server *Server
	http   *httptest.Server
	// ready is from Run to Ready, readyCPU the CPU time this process spent
	// meanwhile (the UI's: nothing else runs in it then).
	ready, readyCPU time.Duration
	heap            int64
}

// startPageLoadUI starts an API server holding the fleet of n Targets and
// the UI on it, and waits until the UI is ready and its queue of changes
// empty.
func startPageLoadUI(b *testing.B, n int) *pageLoadEnv {
	b.Helper()
	a := testenv.StartAPIServer(b)
	dir := filepath.Join(b.TempDir(), "out")
	start := time.Now()
	fleetFill(b, a, dir, n)
	b.Logf("targets=%d: published the charts and created the Targets and TargetReports in %s", n, time.Since(start).Round(time.Millisecond))
	clusterGrant(b, a, "solar-ui", uiRules(b), uiAccount)
	clusterGrant(b, a, "alice", []rbacv1.PolicyRule{{APIGroups: []string{api.Group},
		Resources: []string{"targets", "targetreports", "rollouts"}, Verbs: []string{"get"}}}, "alice")

	l, err := store.OpenLayout(context.Background(), dir, store.LayoutOptions{})
	require.NoError(b, err)
	b.Cleanup(func() { l.Close() })
	e := &pageLoadEnv{}
	var handler http.Handler
	e.http = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == loginPath {
			e.server.sessions.start(w, "alice", nil)
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	e.http.StartTLS()
	b.Cleanup(e.http.Close)
	cfg := rest.CopyConfig(a.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: uiAccount}
	e.server, err = New(Options{Config: cfg, Store: l, Log: slog.New(slog.DiscardHandler)})
	require.NoError(b, err)
	handler = e.server.Handler()

	before := liveHeap()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	start, cpu := time.Now(), cpuTime()
	go func() { _ = e.server.Run(ctx) }()
	select {
	case <-e.server.Ready():
	case <-time.After(10 * time.Minute):
		b.Fatal("the UI was not ready within 10 minutes")
	}
	e.ready, e.readyCPU = time.Since(start), cpuTime()-cpu
	settled := e.settle(b)
	e.heap = int64(liveHeap()) - int64(before)
	b.Logf("targets=%d: ready in %s (%s of CPU), its queue of changes empty %s later; heap %.0f MB", n,
		e.ready.Round(time.Millisecond), e.readyCPU.Round(time.Millisecond), settled.Round(time.Millisecond), float64(e.heap)/1e6)
	return e
}

// settle waits until the changes the watch queued while it filled (one per
// Target and per report) are computed: the queue empty for 2 s. It returns
// how long that took.
func (e *pageLoadEnv) settle(b *testing.B) time.Duration {
	b.Helper()
	start := time.Now()
	for quiet := 0; quiet < 20; time.Sleep(100 * time.Millisecond) {
		quiet++
		if len(e.server.model.dirty) > 0 {
			quiet = 0
		}
		if time.Since(start) > 10*time.Minute {
			b.Fatal("the UI's queue of changes did not empty within 10 minutes")
		}
	}
	return time.Since(start) - 2*time.Second
}

// cpuTime is the CPU time this process has spent, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// gets loads / over TLS without a browser as alice: her first load (RBAC
// asked), then the median of 10; size is the page's bytes.
func (e *pageLoadEnv) gets(b *testing.B, n int) (first, median time.Duration, size int) {
	b.Helper()
	w := httptest.NewRecorder()
	e.server.sessions.start(w, "alice", nil)
	cookie := w.Result().Cookies()[0]
	client := e.http.Client()
	get := func() time.Duration {
		req, err := http.NewRequest("GET", e.http.URL+"/", nil)
		require.NoError(b, err)
		req.AddCookie(cookie)
		start := time.Now()
		resp, err := client.Do(req)
		require.NoError(b, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		require.NoError(b, err)
		require.Equal(b, http.StatusOK, resp.StatusCode)
		require.True(b, strings.Contains(string(body), fmt.Sprintf("Converged: %d<", n)), "not every Target Converged")
		size = len(body)
		return took
	}
	first = get()
	var all []time.Duration
	for range 10 {
		all = append(all, get())
	}
	slices.Sort(all)
	b.Logf("targets=%d: GET / first %s, then %v", n, first.Round(time.Millisecond), all)
	return first, all[len(all)/2], size
}

// navTiming is what the browser's Navigation Timing says of a load, in ms
// from the navigation's start, and the page's decoded size.
type navTiming struct {
	Response float64 `json:"response"`
	DCL      float64 `json:"dcl"`
	Load     float64 `json:"load"`
	Size     int     `json:"size"`
	// Parsed is domInteractive (the HTML parsed); Resources what else the
	// page fetched, each as name start–end (for the log).
	Parsed    float64  `json:"parsed"`
	Resources []string `json:"resources"`
}

// navTimingJS is the navigation entry once its load event ended, else null.
const navTimingJS = `(() => {
	const e = performance.getEntriesByType("navigation")[0];
	if (!e || e.loadEventEnd <= 0) return null;
	return {response: e.responseEnd - e.startTime, dcl: e.domContentLoadedEventEnd - e.startTime,
		load: e.loadEventEnd - e.startTime, size: e.decodedBodySize, parsed: e.domInteractive - e.startTime,
		resources: performance.getEntriesByType("resource").map((r) =>
			r.name.replace(location.origin, "") + " " + r.startTime.toFixed(0) + "–" + r.responseEnd.toFixed(0))};
})()`

// browserLoad navigates br to url and returns the load's Navigation Timing.
func browserLoad(b *testing.B, br *browser.Browser, url string) navTiming {
	b.Helper()
	br.Do(b, chromedp.Navigate(url))
	deadline := time.Now().Add(30 * time.Second)
	for {
		if t := browser.Run(b, br, chromedp.Evaluate[*navTiming](navTimingJS)); t != nil {
			return *t
		}
		if time.Now().After(deadline) {
			b.Fatal("the page's load event did not end within 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func median(loads []navTiming, f func(navTiming) float64) float64 {
	v := make([]float64, len(loads))
	for i, l := range loads {
		v[i] = f(l)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// clusterGrant gives user rules in every namespace.
func clusterGrant(tb testing.TB, a *testenv.APIServer, name string, rules []rbacv1.PolicyRule, user string) {
	tb.Helper()
	ctx := context.Background()
	_, err := a.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
	require.NoError(tb, err)
	_, err = a.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}, metav1.CreateOptions{})
	require.NoError(tb, err)
}
