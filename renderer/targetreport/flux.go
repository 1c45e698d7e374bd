package targetreport

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Object is a Flux object as the API server returns it, unstructured
// (OCIRepository, HelmRelease); nil is a missing one.
type Object = map[string]any

// maxMessage bounds a condition's message as metav1.Condition's schema
// does (32 KiB): a longer one would make the API server refuse the report.
const maxMessage = 32768

// PhaseOf rolls a pair up into a phase, gating every condition on its own
// observedGeneration: a condition about an older generation says nothing
// about this one (helm-controller parks the object's status.observedGeneration
// at -1 while it works, so that cannot gate). In order:
//   - no pair: Pending;
//   - a Stalled=True half (helm-controller: remediation spent its retries):
//     Failed;
//   - a half whose Ready=False: Degraded, a retry coming (helm-controller
//     keeps Reconciling=True, ProgressingWithRetry, beside it; a rollback,
//     Remediated with RollbackSucceeded, is this too; source-controller
//     retries on its interval);
//   - both halves Ready=True: Ready;
//   - else (a half missing, without a current Ready, Ready=Unknown while an
//     action runs): Progressing.
//
// Drifted and failed tests are conditions of their own, kept verbatim, not
// phases.
func PhaseOf(source, helm Object) Phase {
	src, hr := statuses(source), statuses(helm)
	switch {
	case source == nil && helm == nil:
		return Pending
	case hr["Stalled"] == metav1.ConditionTrue, src["Stalled"] == metav1.ConditionTrue:
		return Failed
	case src["Ready"] == metav1.ConditionFalse, hr["Ready"] == metav1.ConditionFalse:
		return Degraded
	case src["Ready"] == metav1.ConditionTrue && hr["Ready"] == metav1.ConditionTrue:
		return Ready
	}
	return Progressing
}

// statuses are the statuses of o's conditions, by type, that are about o's
// current generation: a stale one is left out (none for a nil o).
func statuses(o Object) map[string]metav1.ConditionStatus {
	out := map[string]metav1.ConditionStatus{}
	for _, c := range Conditions(o) {
		if current(o, c) {
			out[c.Type] = c.Status
		}
	}
	return out
}

// current says whether c is about o's metadata.generation: by the
// condition's own observedGeneration, else (a controller that sets none)
// by status.observedGeneration.
func current(o Object, c metav1.Condition) bool {
	gen := number(o, "metadata", "generation")
	if c.ObservedGeneration != 0 {
		return c.ObservedGeneration == gen
	}
	return number(o, "status", "observedGeneration") == gen
}

// Conditions are o's status.conditions, decoded, their messages bounded.
func Conditions(o Object) []metav1.Condition {
	st, _ := o["status"].(map[string]any)
	raw, ok := st["conditions"]
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil
	}
	var out []metav1.Condition
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	for i := range out {
		out[i].Message = BoundMessage(out[i].Message)
	}
	byType(out)
	return out
}

// BoundMessage cuts s to what a condition's message holds (maxMessage
// bytes) on a character boundary, and replaces invalid UTF-8: what is
// written reads back the same.
func BoundMessage(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// Revision is the chart version a HelmRelease has live: the newest entry
// of its status.history; "" when none.
func Revision(helm Object) string {
	st, _ := helm["status"].(map[string]any)
	history, _ := st["history"].([]any)
	if len(history) == 0 {
		return ""
	}
	h, _ := history[0].(map[string]any)
	v, _ := h["chartVersion"].(string)
	return v
}

// number reads an integer field at path; 0 when absent.
func number(o Object, path ...string) int64 {
	var v any = map[string]any(o)
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	case int:
		return int64(n)
	case json.Number:
		i, _ := n.Int64()
		return i
	}
	return 0
}

// equalJSON compares a and b by their JSON.
func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
