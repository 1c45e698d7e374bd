package ui

import (
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/rolloutstore"
	"github.com/solar-pipeline/solar/renderer/status"
)

//go:embed templates/*.html
var templateFiles embed.FS

// static is what /static/ serves: the style and the live script.
//
//go:embed static
var static embed.FS

var pages = map[string]*template.Template{}

func init() {
	for _, p := range []string{"overview", "target", "rollout"} {
		pages[p] = template.Must(template.ParseFS(templateFiles, "templates/layout.html", "templates/"+p+".html"))
	}
}

// page is what every page's layout needs.
type page struct {
	Title, User, CSRF string
}

func (s *Server) render(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pages[name].ExecuteTemplate(w, name+".html", data); err != nil {
		s.opts.Log.Error("rendering a page", "page", name, "error", err)
	}
}

// count is how many Targets are in a state.
type count struct {
	State string
	N     int
}

func (s *Server) handleOverview(w http.ResponseWriter, r *http.Request, se *session) {
	visible := s.visible(r, se, "targets")
	targets, _ := s.model.snapshot(visible)
	_, rollouts := s.model.snapshot(s.visible(r, se, "rollouts"))
	n := map[string]int{}
	for _, t := range targets {
		n[t.State]++
	}
	var counts []count
	for _, st := range slices.Sorted(maps.Keys(n)) {
		counts = append(counts, count{st, n[st]})
	}
	s.render(w, "overview", struct {
		page
		Counts   []count
		Targets  []status.Target
		Rollouts []*rolloutstore.Doc
	}{page{"Overview", se.User, se.CSRF}, counts, targets, rollouts})
}

// visible answers, per namespace, whether se's user may get resource there
// (each namespace asked once per request, then kept for AccessTTL).
func (s *Server) visible(r *http.Request, se *session, resource string) func(ns string) bool {
	known := map[string]bool{}
	return func(ns string) bool {
		ok, asked := known[ns]
		if !asked {
			ok = s.access.allowed(r.Context(), se, "get", resource, ns)
			known[ns] = ok
		}
		return ok
	}
}

func (s *Server) handleTarget(w http.ResponseWriter, r *http.Request, se *session) {
	id := load.ID{Namespace: r.PathValue("ns"), Name: r.PathValue("name")}
	t, ok := s.model.target(id)
	// Not allowed and not there read the same: a page says nothing of
	// what the user may not see.
	if !ok || !s.access.allowed(r.Context(), se, "get", "targets", id.Namespace) {
		http.NotFound(w, r)
		return
	}
	s.render(w, "target", struct {
		page
		Target status.Target
	}{page{"Target " + id.Namespace + "/" + id.Name, se.User, se.CSRF}, t})
}

// verbs are the buttons of a rollout page.
var verbs = []string{rolloutstore.Pause, rolloutstore.Resume, rolloutstore.Approve, rolloutstore.Abort}

// rolloutResource is the resource whose update RBAC lets a user act on a
// rollout: the Rollout's, or the DeviceUpgrade's of a device rollout.
func rolloutResource(name string) string {
	if strings.HasPrefix(name, api.DeviceRolloutPrefix) {
		return "deviceupgrades"
	}
	return "rollouts"
}

func (s *Server) handleRollout(w http.ResponseWriter, r *http.Request, se *session) {
	id := load.ID{Namespace: r.PathValue("ns"), Name: r.PathValue("name")}
	doc := s.model.rollout(id)
	if doc == nil || !s.access.allowed(r.Context(), se, "get", rolloutResource(id.Name), id.Namespace) {
		http.NotFound(w, r)
		return
	}
	var can []string
	if s.access.allowed(r.Context(), se, "update", rolloutResource(id.Name), id.Namespace) {
		can = verbs
	}
	s.render(w, "rollout", struct {
		page
		Rollout *rolloutstore.Doc
		Verbs   []string
	}{page{"Rollout " + id.Namespace + "/" + id.Name, se.User, se.CSRF}, doc, can})
}

// handleRolloutVerb writes an operator's verb into a rollout's state, as
// solar rollout VERB does: the form must carry the session's token, and
// the user's RBAC must let them update the Rollout.
func (s *Server) handleRolloutVerb(w http.ResponseWriter, r *http.Request, se *session) {
	id := load.ID{Namespace: r.PathValue("ns"), Name: r.PathValue("name")}
	verb := r.PathValue("verb")
	if !se.validCSRF(r.PostFormValue("csrf")) {
		http.Error(w, "the form's token is missing or wrong (CSRF): reload the page", http.StatusForbidden)
		return
	}
	if !slices.Contains(verbs, verb) {
		http.Error(w, fmt.Sprintf("unknown action %q", verb), http.StatusBadRequest)
		return
	}
	if !s.access.allowed(r.Context(), se, "update", rolloutResource(id.Name), id.Namespace) {
		http.Error(w, "your Kubernetes permissions do not let you update it", http.StatusForbidden)
		return
	}
	doc, err := rolloutstore.Act(r.Context(), s.opts.Store, id.Namespace, id.Name, verb, "", rolloutstore.Options{Settle: s.opts.Settle, Log: s.opts.Log})
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	s.opts.Log.Info("rollout action", "user", se.User, "namespace", id.Namespace, "rollout", id.Name, "verb", verb)
	s.model.setRollout(doc)
	http.Redirect(w, r, "/rollouts/"+id.Namespace+"/"+id.Name, http.StatusSeeOther)
}

// handleEvents streams the changes the user may see as server-sent events
// (event target or rollout, data the JSON of its status or state) until
// the browser goes; a comment every 15 s keeps proxies from closing it.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request, se *session) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	changes, cancel := s.model.subscribe()
	defer cancel()
	_, _ = fmt.Fprint(w, ": live\n\n")
	flusher.Flush()
	beat := time.NewTicker(15 * time.Second)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-beat.C:
			if s.sessions.of(r) == nil { // logged out or expired meanwhile
				return
			}
			_, _ = fmt.Fprint(w, ": beat\n\n")
		case c := <-changes:
			kind, resource, v := "target", "targets", any(c.Target)
			if c.Rollout != nil {
				kind, resource, v = "rollout", rolloutResource(c.Rollout.Name), c.Rollout
			}
			if s.sessions.of(r) == nil {
				return
			}
			if !s.access.allowed(r.Context(), se, "get", resource, c.namespace()) {
				continue
			}
			b, err := json.Marshal(v)
			if err != nil {
				continue
			}
			_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", kind, b)
		}
		flusher.Flush()
	}
}
