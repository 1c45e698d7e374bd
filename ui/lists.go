package ui

import (
	"cmp"
	"maps"
	"net/http"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/solar-pipeline/solar/renderer/rolloutstore"
	"github.com/solar-pipeline/solar/renderer/status"
)

// The overview stays small however many Targets there are: their counts,
// one row per namespace, and the Targets not converged up to
// attentionMax; a namespace's page lists its Targets pageSize at a time.
// A page of 1,000 table rows costs a browser far more than the server
// (BenchmarkPageLoad).
const (
	attentionMax = 100
	pageSize     = 200
)

// count is how many Targets are in a state.
type count struct {
	State string
	N     int
}

// counts are ts's states and how many of each, by state.
func counts(ts []status.Target) []count {
	n := map[string]int{}
	for _, t := range ts {
		n[t.State]++
	}
	var out []count
	for _, st := range slices.Sorted(maps.Keys(n)) {
		out = append(out, count{st, n[st]})
	}
	return out
}

// nsSummary is one namespace's row on the overview.
type nsSummary struct {
	Namespace string
	Total     int
	Counts    []count
}

func (s *Server) handleOverview(w http.ResponseWriter, r *http.Request, se *session) {
	targets, rollouts := s.model.snapshot()
	canTargets := s.visible(r, se)
	targets = slices.DeleteFunc(targets, func(t status.Target) bool { return !canTargets(t.Namespace) })
	rollouts = slices.DeleteFunc(rollouts, func(d *rolloutstore.Doc) bool {
		return !s.access.allowed(r.Context(), se, "get", rolloutResource(d.Name), d.Namespace, "")
	})
	byNS := map[string][]status.Target{}
	for _, t := range targets {
		byNS[t.Namespace] = append(byNS[t.Namespace], t)
	}
	var namespaces []nsSummary
	for _, ns := range slices.Sorted(maps.Keys(byNS)) {
		namespaces = append(namespaces, nsSummary{ns, len(byNS[ns]), counts(byNS[ns])})
	}
	attention := slices.DeleteFunc(slices.Clone(targets), func(t status.Target) bool { return t.State == status.Converged })
	more := max(0, len(attention)-attentionMax)
	attention = attention[:len(attention)-more]
	s.render(w, "overview", struct {
		page
		Counts     []count
		Targets    []status.Target
		More       int
		Namespaces []nsSummary
		Rollouts   []*rolloutstore.Doc
		Fleet      []fleetCounts
	}{page{"Overview", se.User, se.CSRF}, counts(targets), attention, more, namespaces, rollouts, s.fleetCounts(r.Context(), se)})
}

// handleNamespace lists the Targets of one namespace, pageSize at a time
// (?page=N, from 1).
func (s *Server) handleNamespace(w http.ResponseWriter, r *http.Request, se *session) {
	ns := r.PathValue("ns")
	if len(validation.IsDNS1123Label(ns)) != 0 || !s.canSeeTarget(r.Context(), se, ns, "") {
		http.NotFound(w, r)
		return
	}
	all, _ := s.model.snapshot()
	all = slices.DeleteFunc(all, func(t status.Target) bool { return t.Namespace != ns })
	pageNo, err := strconv.Atoi(cmp.Or(r.URL.Query().Get("page"), "1"))
	last := max(1, (len(all)+pageSize-1)/pageSize)
	if err != nil || pageNo < 1 || pageNo > last {
		http.Error(w, "page is a number from 1 to "+strconv.Itoa(last), http.StatusBadRequest)
		return
	}
	from, to := (pageNo-1)*pageSize, min(len(all), pageNo*pageSize)
	prev, next := pageNo-1, pageNo+1
	if next > last {
		next = 0
	}
	s.render(w, "namespace", struct {
		page
		Namespace                      string
		Counts                         []count
		Targets                        []status.Target
		First, Last, Total, Prev, Next int
		PageSize                       int
	}{page{"Namespace " + ns, se.User, se.CSRF}, ns, counts(all), all[from:to], from + 1, to, len(all), prev, next, pageSize})
}
