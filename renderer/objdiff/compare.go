package objdiff

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/solar-pipeline/solar/renderer/credential"
)

// What a Change does to its object.
const (
	Create = "create"
	Update = "update"
	Delete = "delete"
)

// Change is one object that two states of a chain render differently.
type Change struct {
	Action string `json:"action"`
	Object
	// Diff is the unified diff of the object's YAML, secrets masked.
	Diff string `json:"diff"`
	// WaitsFor, of a HelmRelease created or updated with spec.dependsOn,
	// are the HelmReleases helm-controller installs it after:
	// [<namespace>/]<name>, in its order.
	WaitsFor []string `json:"waitsFor,omitempty"`
}

// Compare lists the objects that differ between old and new, in the order
// of new (then the deleted, in the order of old), with a unified diff of
// each, secrets masked: a Secret's data shows as fingerprints, and so do
// tokens and passwords anywhere (Mask).
func Compare(old, new []Object) ([]Change, error) {
	before := map[string]Object{}
	for _, o := range old {
		before[o.Key()] = o
	}
	seen := map[string]bool{}
	var out []Change
	for _, o := range new {
		k := o.Key()
		seen[k] = true
		prev, ok := before[k]
		c, changed, err := change(prev, ok, o, true)
		if err != nil {
			return nil, err
		}
		if changed {
			out = append(out, c)
		}
	}
	for _, o := range old {
		if seen[o.Key()] {
			continue
		}
		seen[o.Key()] = true
		c, _, err := change(o, true, Object{}, false)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// change compares one object's two states; either may be absent.
func change(old Object, hasOld bool, new Object, hasNew bool) (Change, bool, error) {
	if hasOld && hasNew && raw(old) == raw(new) {
		return Change{}, false, nil
	}
	a, err := text(old, hasOld)
	if err != nil {
		return Change{}, false, err
	}
	b, err := text(new, hasNew)
	if err != nil {
		return Change{}, false, err
	}
	if a == b {
		return Change{}, false, nil
	}
	c := Change{Action: Update, Object: new}
	from, to := "a/"+old.String(), "b/"+new.String()
	switch {
	case !hasOld:
		c.Action, from = Create, "/dev/null"
	case !hasNew:
		c.Action, c.Object, to = Delete, old, "/dev/null"
	}
	if hasNew {
		c.WaitsFor = waitsFor(new)
	}
	c.Diff, err = difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: lines(a), B: lines(b), FromFile: from, ToFile: to, Context: 3,
	})
	return c, true, err
}

// lines are the lines of text, each with its newline (none for "").
func lines(text string) []string {
	if text == "" {
		return nil
	}
	out := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i := range out {
		out[i] += "\n"
	}
	return out
}

// text is an object as YAML, keys sorted, secrets masked; "" when absent.
func text(o Object, present bool) (string, error) {
	if !present {
		return "", nil
	}
	body := o.body
	if o.Kind == "Secret" {
		body = maskSecret(body)
	}
	b, err := marshalYAML(body)
	if err != nil {
		return "", fmt.Errorf("%s: %w", o, err)
	}
	return Mask(string(b)), nil
}

// maskSecret is a copy of a Secret with every value of data and stringData
// replaced by its fingerprint.
func maskSecret(body map[string]any) map[string]any {
	out := make(map[string]any, len(body))
	for k, v := range body {
		out[k] = v
	}
	for _, field := range []string{"data", "stringData"} {
		m, ok := body[field].(map[string]any)
		if !ok {
			continue
		}
		masked := make(map[string]any, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			masked[k] = fingerprint(fmt.Sprint(m[k]))
		}
		out[field] = masked
	}
	return out
}

// fingerprint stands for a secret value: a reviewer sees that it changed,
// never the value.
func fingerprint(v string) string {
	sum := sha256.Sum256([]byte(v))
	return "<redacted sha256:" + hex.EncodeToString(sum[:])[:12] + ">"
}

// secretLine is a line of YAML whose value is a secret: a token in a
// kubeconfig (or a list item's), a password, a client secret, an API key,
// key data.
var secretLine = regexp.MustCompile(`(?mi)^(\s*(?:- )?"?(?:token|access-token|id-token|refresh-token|password|client-secret|client-key-data|client-certificate-data|api-?key|secret-?key|private-?key)"?\s*:\s*)("?)([^"\s]+)("?)\s*$`)

// Mask replaces secret values in YAML text with a fingerprint: a reviewer
// sees that a token changed, never the token. The stand-in of a token a
// publish would mint (a dry run) says so.
func Mask(text string) string {
	return secretLine.ReplaceAllStringFunc(text, func(line string) string {
		m := secretLine.FindStringSubmatch(line)
		if m[3] == credential.PendingToken {
			return m[1] + "<a new token, minted at publish>"
		}
		return m[1] + fingerprint(m[3])
	})
}

// Redact replaces every secret value Mask masks with "<redacted>", the same
// for any value: what pins a chart whose token is minted at publish.
func Redact(text string) string {
	return secretLine.ReplaceAllStringFunc(text, func(line string) string {
		return secretLine.FindStringSubmatch(line)[1] + "<redacted>"
	})
}

// waitsFor are the dependencies of a HelmRelease (spec.dependsOn), each
// <name>, or <namespace>/<name> when it names another namespace; nil for
// any other object.
func waitsFor(o Object) []string {
	if o.Kind != "HelmRelease" {
		return nil
	}
	spec, _ := o.body["spec"].(map[string]any)
	deps, _ := spec["dependsOn"].([]any)
	var out []string
	for _, d := range deps {
		m, _ := d.(map[string]any)
		name, _ := m["name"].(string)
		if ns, _ := m["namespace"].(string); ns != "" && ns != o.Namespace {
			name = ns + "/" + name
		}
		out = append(out, name)
	}
	return out
}
