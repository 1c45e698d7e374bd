package ui

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

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
	for _, p := range []string{"overview", "namespace", "target", "rollout"} {
		pages[p] = template.Must(template.ParseFS(templateFiles, "templates/layout.html", "templates/targets.html", "templates/"+p+".html"))
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

// visible answers, per namespace, whether se's user may see its Targets'
// states there: get on targets and on targetreports (what solar status
// reads), each namespace asked once per request, then kept for AccessTTL.
func (s *Server) visible(r *http.Request, se *session) func(ns string) bool {
	known := map[string]bool{}
	return func(ns string) bool {
		ok, asked := known[ns]
		if !asked {
			ok = s.canSeeTarget(r.Context(), se, ns, "")
			known[ns] = ok
		}
		return ok
	}
}

// canSeeTarget says whether se's user may see Target ns/name's state (name
// "": every Target of ns).
func (s *Server) canSeeTarget(ctx context.Context, se *session, ns, name string) bool {
	return s.access.allowed(ctx, se, "get", "targets", ns, name) && s.access.allowed(ctx, se, "get", "targetreports", ns, name)
}

// pathID is the {ns}/{name} of the request's path, when they are a valid
// namespace and object name: anything else (a "/" or ".." decoded from
// %2F, say) names nothing.
func pathID(r *http.Request) (load.ID, bool) {
	id := load.ID{Namespace: r.PathValue("ns"), Name: r.PathValue("name")}
	ok := len(validation.IsDNS1123Label(id.Namespace)) == 0 && len(validation.IsDNS1123Subdomain(id.Name)) == 0
	return id, ok
}

func (s *Server) handleTarget(w http.ResponseWriter, r *http.Request, se *session) {
	// Not allowed and not there read the same: a page says nothing of
	// what the user may not see (asked first, so that the time it takes
	// does not tell either).
	id, ok := pathID(r)
	if !ok || !s.canSeeTarget(r.Context(), se, id.Namespace, id.Name) {
		http.NotFound(w, r)
		return
	}
	t, ok := s.model.target(id)
	if !ok {
		http.NotFound(w, r)
		return
	}
	s.render(w, "target", struct {
		page
		Target    status.Target
		Signature sigView
	}{page{"Target " + id.Namespace + "/" + id.Name, se.User, se.CSRF}, t, s.sigs.view(r.Context(), t)})
}

// verbs are the buttons of a rollout page.
var verbs = []string{rolloutstore.Pause, rolloutstore.Resume, rolloutstore.Approve, rolloutstore.Abort}

// rolloutResource is the resource whose update RBAC lets a user act on a
// rollout: the Rollout's, or the DeviceUpgrade's of a device rollout.
func rolloutResource(name string) string {
	if api.IsDeviceRollout(name) {
		return "deviceupgrades"
	}
	return "rollouts"
}

func (s *Server) handleRollout(w http.ResponseWriter, r *http.Request, se *session) {
	id, ok := pathID(r)
	if !ok || !s.access.allowed(r.Context(), se, "get", rolloutResource(id.Name), id.Namespace, id.Name) {
		http.NotFound(w, r)
		return
	}
	doc := s.model.rollout(id)
	if doc == nil {
		http.NotFound(w, r)
		return
	}
	var can []string
	if s.access.allowed(r.Context(), se, "update", rolloutResource(id.Name), id.Namespace, id.Name) {
		can = verbs
	}
	sp := s.waveSpecs(id)
	s.render(w, "rollout", struct {
		page
		Rollout   *rolloutstore.Doc
		Verbs     []string
		Approvals []approval
		Waves     []waveRow
	}{page{"Rollout " + id.Namespace + "/" + id.Name, se.User, se.CSRF}, doc, can, awaiting(doc, sp), waveRows(doc, sp)})
}

// handleRolloutVerb writes an operator's verb into a rollout's state, as
// solar rollout VERB does: the form must carry the session's token, the
// rollout must be one the page set shows, and the user's RBAC must let them
// update it.
func (s *Server) handleRolloutVerb(w http.ResponseWriter, r *http.Request, se *session) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if !se.validCSRF(r.PostFormValue("csrf")) {
		http.Error(w, "the form's token is missing or wrong (CSRF): reload the page", http.StatusForbidden)
		return
	}
	verb := r.PathValue("verb")
	if !slices.Contains(verbs, verb) {
		http.Error(w, fmt.Sprintf("unknown action %q", verb), http.StatusBadRequest)
		return
	}
	id, ok := pathID(r)
	shown := s.model.rollout(id)
	if !ok || !s.access.allowed(r.Context(), se, "get", rolloutResource(id.Name), id.Namespace, id.Name) || shown == nil {
		http.NotFound(w, r)
		return
	}
	if !s.access.allowed(r.Context(), se, "update", rolloutResource(id.Name), id.Namespace, id.Name) {
		http.Error(w, "your Kubernetes permissions do not let you update it", http.StatusForbidden)
		return
	}
	wave := r.PostFormValue("wave")
	if msg := approveWave(shown, s.waveSpecs(id), wave); verb == rolloutstore.Approve && msg != "" {
		http.Error(w, msg, http.StatusBadRequest)
		return
	}
	doc, err := rolloutstore.Act(r.Context(), s.opts.Store, id.Namespace, id.Name, verb, wave, rolloutstore.Options{Settle: s.opts.Settle, Log: s.opts.Log})
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	s.opts.Log.Info("rollout action", "user", se.User, "namespace", id.Namespace, "rollout", id.Name, "verb", verb, "wave", wave)
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
		case c, open := <-changes:
			if !open || s.sessions.of(r) == nil {
				return // too slow to keep up (the browser reconnects), or logged out
			}
			kind, v := "target", any(c.Target)
			if c.Rollout != nil {
				kind, v = "rollout", c.Rollout
			} else if c.Device != nil {
				kind, v = "device", c.Device
			}
			if !s.sees(r.Context(), se, c) {
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

// sees says whether se's user may see what c is about.
func (s *Server) sees(ctx context.Context, se *session, c change) bool {
	if c.Rollout != nil {
		return s.access.allowed(ctx, se, "get", rolloutResource(c.Rollout.Name), c.Rollout.Namespace, "")
	}
	if c.Device != nil {
		return s.canSeeDevices(ctx, se, c.Device.Device.Namespace)
	}
	return s.canSeeTarget(ctx, se, c.Target.Namespace, "")
}
