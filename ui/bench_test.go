package ui

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/status"
)

// modelServer is a Server whose model holds n Targets, perNS per
// namespace, Target i in state(i), each with two releases, and whose RBAC
// answers are known (alice may see every namespace): what a page load
// costs once the watch is filled.
func modelServer(tb testing.TB, n, perNS int, state func(i int) string) (*Server, *http.Cookie) {
	allow := fake.NewClientset()
	allow.PrependReactor("create", "subjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &authorizationv1.SubjectAccessReview{Status: authorizationv1.SubjectAccessReviewStatus{Allowed: true}}, nil
	})
	s := &Server{opts: Options{Log: slog.New(slog.DiscardHandler), Now: time.Now}, model: newModel(nil, nil, time.Hour, nil, nil),
		access: newAccess(allow, time.Hour, time.Now), sessions: newSessions(time.Hour, time.Now), ready: make(chan struct{})}
	s.fleet = newFleetView(nil, nil, s.model, s.opts.Log) // no fleet: its informers never start
	at := time.Now()
	for i := range n {
		ns := fmt.Sprintf("team-%03d", i/perNS)
		t := status.Target{Namespace: ns, Name: fmt.Sprintf("edge-%05d", i), State: state(i), Bootstrap: "0.0.7",
			LastReportTime: &at, Releases: []status.Release{{Release: ns + "/web", Desired: "0.0.3", Reported: "0.0.3", Phase: "Ready"},
				{Release: ns + "/metrics", Desired: "0.0.2", Reported: "0.0.2", Phase: "Ready"}}}
		s.model.targets[load.ID{Namespace: ns, Name: t.Name}] = t
	}
	w := httptest.NewRecorder()
	s.sessions.start(w, "alice", nil)
	cookie := w.Result().Cookies()[0]
	req := httptest.NewRequest("GET", "/", nil) // the first load asks RBAC; the ones measured do not
	req.AddCookie(cookie)
	s.Handler().ServeHTTP(httptest.NewRecorder(), req)
	return s, cookie
}

// BenchmarkOverview is one load of the overview page with 1,000 and 10,000
// Targets, 100 per namespace, every one of them not converged (the most the
// overview lists), and of a namespace's page (issue 51: under 200 ms with
// 1,000).
func BenchmarkOverview(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		s, cookie := modelServer(b, n, 100, func(int) string { return status.Progressing })
		for _, page := range []struct{ name, path string }{{"overview", "/"}, {"namespace", "/namespaces/team-000"}} {
			b.Run(fmt.Sprintf("targets=%d/%s", n, page.name), func(b *testing.B) {
				h := s.Handler()
				req := httptest.NewRequest("GET", page.path, nil)
				req.AddCookie(cookie)
				b.ReportAllocs()
				for b.Loop() {
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					if w.Code != http.StatusOK {
						b.Fatalf("status %d", w.Code)
					}
					b.ReportMetric(float64(w.Body.Len())/1024, "KiB/page")
				}
			})
		}
	}
}
