package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
)

// selects says whether opts select Target t: of -n (when given), named by
// --target (when given), and with labels -l matches (when given).
func (o Options) selects(t *model.Target) bool {
	return (o.Namespace == "" || t.Namespace == o.Namespace) && (o.Target == "" || t.Name == o.Target) &&
		(!o.selector() || o.Selector.Matches(labels.Set(t.Labels)))
}

// selector says whether a label selector narrows the Targets.
func (o Options) selector() bool {
	return o.Selector != nil && !o.Selector.Empty()
}

// selection is what narrows the Targets, as the flags say it
// ("-n beta --target edge-1 -l tier=device"); "" for every Target.
func (o Options) selection() string {
	var sel []string
	if o.Namespace != "" {
		sel = append(sel, "-n "+o.Namespace)
	}
	if o.Target != "" {
		sel = append(sel, "--target "+o.Target)
	}
	if o.selector() {
		sel = append(sel, "-l "+o.Selector.String())
	}
	return strings.Join(sel, " ")
}

// scope keeps one namespace's run independent of the others: a problem of an
// object the namespace does not use (directly or through a reference that a
// grant allows) becomes a warning for this run. Problems that no object owns
// (a file that does not parse) stay as they are.
func scope(ns string, objs []*load.Object, problems diag.List) diag.List {
	used := usedBy(ns, objs)
	owner := owners(objs)
	out := make(diag.List, len(problems))
	for i, p := range problems {
		out[i] = p
		if o := owner(p); p.Severity == diag.Error && o != nil && !used[o.ID()] {
			out[i].Severity = diag.Warning
			out[i].Message = "not used by namespace " + ns + ": " + p.Message
		}
	}
	return out
}

// usedBy is every object the namespace's Targets depend on: its own objects,
// the bindings from other namespaces that name its Targets and the Profiles
// of other namespaces its grants let match them, what all of them
// refer to (Registries, Releases, ComponentVersions, Components), the grants
// of the namespaces they live in, and the PipelineConfig.
func usedBy(ns string, objs []*load.Object) map[load.ID]bool {
	byID := map[load.ID]*load.Object{}
	for _, o := range objs {
		byID[o.ID()] = o
	}
	used := map[load.ID]bool{}
	var queue []*load.Object
	use := func(id load.ID) {
		if o, ok := byID[id]; ok && !used[id] {
			used[id] = true
			queue = append(queue, o)
		}
	}
	var grants []*load.Object // of ns
	for _, o := range objs {
		if o.Kind == api.KindReferenceGrant && o.Namespace == ns {
			grants = append(grants, o)
		}
	}
	for _, o := range objs {
		if o.Namespace == ns || o.Kind == api.KindPipelineConfig ||
			namesTargetOf(o, ns, grants) || matchesTargetsOf(o, ns, grants) {
			use(o.ID())
		}
	}
	namespaces := map[string]bool{}
	for len(queue) > 0 {
		o := queue[0]
		queue = queue[1:]
		namespaces[o.Namespace] = true
		for _, r := range model.ReferencesOf(o) {
			use(r.ID(o.Namespace))
		}
	}
	for _, o := range objs {
		if o.Kind == api.KindReferenceGrant && namespaces[o.Namespace] {
			used[o.ID()] = true
		}
	}
	return used
}

// namesTargetOf says whether o is a binding of another namespace that names
// a Target of namespace ns and that a ReferenceGrant of ns allows. A binding
// ns does not allow is its own namespace's problem, not ns's: it fails
// closed, and must not stop ns's run (in controller mode the namespaces are
// tenants that do not trust one another).
func namesTargetOf(o *load.Object, ns string, grants []*load.Object) bool {
	for _, r := range model.ReferencesOf(o) {
		if r.To == api.KindTarget && r.ID(o.Namespace).Namespace == ns {
			return slices.ContainsFunc(grants, func(g *load.Object) bool { return allows(g, o.Kind, o.Namespace) })
		}
	}
	return false
}

// matchesTargetsOf says whether o is a Profile of another namespace that
// the grants of ns let match its Targets (model.Set.ProfileGranted): it may
// bind its Release to them.
func matchesTargetsOf(o *load.Object, ns string, grants []*load.Object) bool {
	granted := func(kind string) bool {
		return slices.ContainsFunc(grants, func(g *load.Object) bool { return allows(g, kind, o.Namespace) })
	}
	return o.Kind == api.KindProfile && o.Namespace != ns && granted(api.KindProfile) && granted(api.KindReleaseBinding)
}

// allows says whether grant g lets objects of kind from namespace ns refer
// to Targets of its own namespace.
func allows(g *load.Object, kind, ns string) bool {
	spec, _ := g.Fields["spec"].(map[string]any)
	from, _ := spec["from"].([]any)
	to, _ := spec["to"].([]any)
	return slices.ContainsFunc(from, func(f any) bool {
		m, _ := f.(map[string]any)
		return m["group"] == api.Group && m["kind"] == kind && m["namespace"] == ns
	}) && slices.ContainsFunc(to, func(t any) bool {
		m, _ := t.(map[string]any)
		return m["group"] == api.Group && m["kind"] == api.KindTarget
	})
}

// owners finds the object a problem is about: the last object of the
// problem's file that starts at or before its line.
func owners(objs []*load.Object) func(diag.Problem) *load.Object {
	byFile := map[string][]*load.Object{}
	for _, o := range objs {
		byFile[o.File] = append(byFile[o.File], o)
	}
	for _, l := range byFile {
		slices.SortStableFunc(l, func(a, b *load.Object) int { return a.Line - b.Line })
	}
	return func(p diag.Problem) *load.Object {
		l := byFile[p.File]
		i := sort.Search(len(l), func(i int) bool { return l[i].Line > p.Line })
		if p.Line == 0 || i == 0 {
			return nil
		}
		return l[i-1]
	}
}

// StatusTargets are the Targets of opts.Paths that -n, --target and -l select,
// once the input is valid.
func StatusTargets(opts Options) ([]load.ID, diag.List, error) {
	set, problems, err := Load(opts)
	if err != nil || set == nil {
		return nil, problems, err
	}
	var out []load.ID
	for _, t := range set.Targets {
		if opts.selects(t) {
			out = append(out, targetID(t.Namespace, t.Name))
		}
	}
	if len(out) == 0 {
		if sel := opts.selection(); sel != "" {
			return nil, problems, fmt.Errorf("no Target matches %s: nothing to show", sel)
		}
		return nil, problems, errors.New("no Target in the input: nothing to show")
	}
	return out, problems, nil
}
