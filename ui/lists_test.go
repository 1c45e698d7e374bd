package ui

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/renderer/status"
)

// get is the status and body of GET path as the session of cookie.
func get(t *testing.T, s *Server, cookie *http.Cookie, path string) (int, string) {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	req.AddCookie(cookie)
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, req)
	return w.Code, w.Body.String()
}

// TestOverviewStaysSmall (issue 51: a page load under 200 ms with 1,000
// Targets): with 1,000 Targets, 250 of them not converged, the overview
// lists each namespace once and the first 100 Targets not converged, and
// says how many more; a namespace's page lists its Targets 200 at a time,
// with links to the pages before and after; a page out of range is a 400.
func TestOverviewStaysSmall(t *testing.T) {
	s, cookie := modelServer(t, 1000, 500, func(i int) string {
		if i%4 == 0 {
			return status.Progressing
		}
		return status.Converged
	})
	code, body := get(t, s, cookie, "/")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, 100, strings.Count(body, `<tr id="t/`), "the first 100 Targets not converged")
	assert.Contains(t, body, "And 150 more: see each namespace")
	assert.NotContains(t, body, `id="t/team-000/edge-00001"`, "a converged Target is not listed")
	for _, ns := range []string{"team-000", "team-001"} {
		assert.Contains(t, body, fmt.Sprintf(`<a href="/namespaces/%s">%s</a></td><td>500</td>`, ns, ns))
	}
	assert.Contains(t, body, "Converged: 750")
	assert.Less(t, len(body), 64<<10, "the overview's size does not grow with the Targets")

	code, body = get(t, s, cookie, "/namespaces/team-001")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, 200, strings.Count(body, `<tr id="t/team-001/`))
	assert.Contains(t, body, "Targets 1–200 of 500")
	assert.Contains(t, body, `href="/namespaces/team-001?page=2" rel="next"`)
	assert.NotContains(t, body, `rel="prev"`)
	code, body = get(t, s, cookie, "/namespaces/team-001?page=3")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, 100, strings.Count(body, `<tr id="t/team-001/`))
	assert.Contains(t, body, "Targets 401–500 of 500")
	assert.Contains(t, body, `href="/namespaces/team-001?page=2" rel="prev"`)
	assert.NotContains(t, body, `rel="next"`)
	for _, bad := range []string{"?page=4", "?page=0", "?page=x"} {
		code, _ = get(t, s, cookie, "/namespaces/team-001"+bad)
		assert.Equal(t, http.StatusBadRequest, code, bad)
	}
	code, _ = get(t, s, cookie, "/namespaces/Not_A_Namespace")
	assert.Equal(t, http.StatusNotFound, code)
}
