package ui

import (
	"context"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/renderer/fleet"
)

func init() {
	pages["fleet"] = template.Must(template.ParseFS(templateFiles, "templates/layout.html", "templates/fleet.html"))
}

// deviceRow is a Device as the fleet page shows it: the object's name,
// device id, platform and labels, and what the bucket holds of its device
// id, every time written out as the page shows it.
type deviceRow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	DeviceID  string `json:"deviceId"`
	Platform  string `json:"platform"`
	Labels    string `json:"labels"`
	// State is what the device reported last (committed, rolled-back,
	// rollback-failed, waiting-for-window...), "invalid" when it cannot be
	// read, "none" when it reported nothing; Detail its step and the
	// version it was about; StateTime when it reported it.
	State     string `json:"state"`
	Detail    string `json:"detail"`
	StateTime string `json:"stateTime"`
	// Running is the agent's version the device said it runs.
	Running string `json:"running"`
	// Attempt is the version its current attempt installs, AttemptID the
	// attempt's UUID, AttemptTime when it was written.
	Attempt     string `json:"attempt"`
	AttemptID   string `json:"attemptId"`
	AttemptTime string `json:"attemptTime"`
	Reason      string `json:"reason"`
	// Repair is the command that clears a rollback-failed block, to run
	// once the device is repaired by hand ("" for any other state).
	Repair string `json:"repair"`
}

// deviceChange is what a browser is told of a Device: its row (Deleted:
// the Device is gone) and its namespace's Devices by state.
type deviceChange struct {
	Device  deviceRow `json:"device"`
	Counts  []count   `json:"counts"`
	Deleted bool      `json:"deleted,omitempty"`
}

// fleetCounts are a namespace's Devices by state, for the overview.
type fleetCounts struct {
	Namespace string
	Counts    []count
}

// stateOf is the word a device's state is counted and shown under.
func stateOf(s fleet.Status) string {
	switch {
	case s.StateError != "":
		return "invalid"
	case s.State != nil && s.State.State != "":
		return s.State.State
	}
	return "none"
}

// timeFormat is how the pages write a time.
const timeFormat = "2006-01-02 15:04:05Z"

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeFormat)
}

// row is Device u's row, with what the bucket holds of its device id.
func (f *fleetView) row(u *unstructured.Unstructured) deviceRow {
	id := deviceID(u)
	s, _ := f.lookup(id)
	platform, _, _ := unstructured.NestedString(u.Object, "spec", "platform")
	var lbls []string
	for _, k := range slices.Sorted(maps.Keys(u.GetLabels())) {
		lbls = append(lbls, k+"="+u.GetLabels()[k])
	}
	r := deviceRow{Namespace: u.GetNamespace(), Name: u.GetName(), DeviceID: id, Platform: platform,
		Labels: strings.Join(lbls, ", "), State: stateOf(s), StateTime: formatTime(s.StateTime), AttemptTime: formatTime(s.AttemptTime)}
	reasons := []string{}
	for _, e := range []string{s.AttemptError, s.StateError} {
		if e != "" {
			reasons = append(reasons, e)
		}
	}
	if s.Current != nil {
		r.Attempt, r.AttemptID = s.Current.Attempt.TargetVersion, s.Current.UUID
	}
	if st := s.State; st != nil {
		var d []string
		if st.Step != "" {
			d = append(d, "at "+st.Step)
		}
		if st.Version != "" {
			d = append(d, "("+st.Version+")")
		}
		r.Detail, r.Running = strings.Join(d, " "), st.Running
		if st.Reason != "" {
			reasons = append(reasons, st.Reason)
		}
		if st.State == wire.PhaseRollbackFailed {
			r.Repair = fmt.Sprintf("solar fleet repair %s --reason \"WHAT WAS REPAIRED\"", id)
		}
	}
	r.Reason = strings.Join(reasons, "; ")
	return r
}

// canSeeDevices says whether se's user may see the Devices of ns and what
// the bucket holds of them: get on devices there.
func (s *Server) canSeeDevices(ctx context.Context, se *session, ns string) bool {
	return s.access.allowed(ctx, se, "get", "devices", ns, "")
}

// fleetCounts are the Devices by state of each namespace whose Devices
// se's user may see (none without the fleet's bucket).
func (s *Server) fleetCounts(ctx context.Context, se *session) []fleetCounts {
	var out []fleetCounts
	for _, ns := range s.fleet.namespaces() {
		if s.canSeeDevices(ctx, se, ns) {
			out = append(out, fleetCounts{ns, s.fleet.counts(ns)})
		}
	}
	return out
}

// handleFleet is a namespace's Devices. A namespace whose Devices the user
// may not see, or any namespace without the fleet's bucket, answers 404 as
// a missing page does (RBAC asked first).
func (s *Server) handleFleet(w http.ResponseWriter, r *http.Request, se *session) {
	ns := r.PathValue("ns")
	if s.fleet.devices == nil || len(validation.IsDNS1123Label(ns)) != 0 || !s.canSeeDevices(r.Context(), se, ns) {
		http.NotFound(w, r)
		return
	}
	var rows []deviceRow
	for _, u := range s.fleet.list(ns) {
		rows = append(rows, s.fleet.row(u))
	}
	s.fleet.mu.RLock()
	problem := s.fleet.problem
	s.fleet.mu.RUnlock()
	s.render(w, "fleet", struct {
		page
		Namespace string
		Devices   []deviceRow
		Counts    []count
		Problem   string
	}{page{"Fleet " + ns, se.User, se.CSRF}, ns, rows, s.fleet.counts(ns), problem})
}
