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

// benchServer is a Server whose model holds n Targets, 100 per namespace,
// each with two releases, and whose RBAC answers are known (alice may see
// every namespace): what a page load costs once the watch is filled.
func benchServer(b *testing.B, n int) (*Server, *http.Cookie) {
	allow := fake.NewClientset()
	allow.PrependReactor("create", "subjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &authorizationv1.SubjectAccessReview{Status: authorizationv1.SubjectAccessReviewStatus{Allowed: true}}, nil
	})
	s := &Server{opts: Options{Log: slog.New(slog.DiscardHandler), Now: time.Now}, model: newModel(nil, nil, time.Hour, nil),
		access: newAccess(allow, time.Hour, time.Now), sessions: newSessions(time.Hour, time.Now), ready: make(chan struct{})}
	at := time.Now()
	for i := range n {
		ns := fmt.Sprintf("team-%03d", i/100)
		t := status.Target{Namespace: ns, Name: fmt.Sprintf("edge-%05d", i), State: status.Converged, Bootstrap: "0.0.7",
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
// Targets (issue 51: under 200 ms with 1,000).
func BenchmarkOverview(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) {
			s, cookie := benchServer(b, n)
			h := s.Handler()
			req := httptest.NewRequest("GET", "/", nil)
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
