package resolve

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
)

// declared is one dependency as written: on a Release, or on the
// ComponentVersion it deploys.
type declared struct {
	key  string // the uniqueName it names
	obj  *load.Object
	path string
}

// at is the FILE:LINE of the declaration.
func (d declared) at() string { return fmt.Sprintf("%s:%d", d.obj.File, d.obj.LineOf(d.path)) }

// edge is a dependency of one selected release on another.
type edge struct {
	to   *Selected
	decl declared
}

// declarations are the dependencies of a selected release: its Release's
// spec.dependencies, then its ComponentVersion's (each names the component,
// which is the uniqueName of its release unless that sets another).
func declarations(s *model.Set, sel *Selected) []declared {
	r := sel.Release
	var out []declared
	o := s.Loaded(api.KindRelease, r.Namespace, r.Name)
	for i, d := range r.Spec.Dependencies {
		out = append(out, declared{key: d.UniqueName, obj: o, path: load.Index("spec.dependencies", i) + ".uniqueName"})
	}
	if cv := sel.Chart.ComponentVersion; cv != nil {
		o := s.Loaded(api.KindComponentVersion, cv.Namespace, cv.Name)
		for i, d := range cv.Spec.Dependencies {
			out = append(out, declared{key: d.ComponentRef.Name, obj: o, path: load.Index("spec.dependencies", i) + ".componentRef.name"})
		}
	}
	return out
}

// dependencies sets each selected release's DependsOn and reports, all at
// once, every dependency the Target cannot satisfy: a uniqueName no release
// bound to it has, one whose every release the Target excluded (with the
// reasons), and every cycle.
func dependencies(s *model.Set, out *Resolution) {
	t := out.Target
	byKey := map[string]*Selected{}
	for _, r := range out.Releases {
		byKey[r.UniqueName] = r
	}
	excluded := map[string][]Excluded{}
	for _, e := range out.Excluded {
		excluded[e.UniqueName] = append(excluded[e.UniqueName], e)
	}
	edges := map[*Selected][]edge{}
	for _, sel := range out.Releases {
		for _, d := range declarations(s, sel) {
			dep, ok := byKey[d.key]
			switch {
			case ok:
				if !slices.Contains(sel.DependsOn, dep) {
					sel.DependsOn = append(sel.DependsOn, dep)
				}
				edges[sel] = append(edges[sel], edge{to: dep, decl: d})
			case len(excluded[d.key]) > 0:
				var why []string
				for _, e := range excluded[d.key] {
					why = append(why, Name(e.Release)+" is excluded: "+e.Reason)
				}
				out.Problems.Errorf(d.obj.File, d.obj.LineOf(d.path), d.path,
					"Release %s for Target %s/%s depends on %q, which the Target does not get: %s",
					Name(sel.Release), t.Namespace, t.Name, d.key, strings.Join(why, "; "))
			default:
				out.Problems.Errorf(d.obj.File, d.obj.LineOf(d.path), d.path,
					"Release %s for Target %s/%s depends on %q, the uniqueName of no release bound to the Target",
					Name(sel.Release), t.Namespace, t.Name, d.key)
			}
		}
		slices.SortFunc(sel.DependsOn, func(a, b *Selected) int { return cmp.Compare(a.UniqueName, b.UniqueName) })
	}
	for _, knot := range knots(out.Releases, edges) {
		cycleProblem(out, knot, edges)
	}
}

// knots are the strongly connected components of the dependency graph that
// hold a cycle (Tarjan's algorithm), each in the order of rs.
func knots(rs []*Selected, edges map[*Selected][]edge) [][]*Selected {
	index := map[*Selected]int{}
	low := map[*Selected]int{}
	onStack := map[*Selected]bool{}
	var stack []*Selected
	var out [][]*Selected
	var visit func(v *Selected)
	visit = func(v *Selected) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		onStack[v] = true
		for _, e := range edges[v] {
			if _, seen := index[e.to]; !seen {
				visit(e.to)
				low[v] = min(low[v], low[e.to])
			} else if onStack[e.to] {
				low[v] = min(low[v], index[e.to])
			}
		}
		if low[v] != index[v] {
			return
		}
		var scc []*Selected
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			scc = append(scc, w)
			if w == v {
				break
			}
		}
		self := slices.ContainsFunc(edges[v], func(e edge) bool { return e.to == v })
		if len(scc) > 1 || self {
			slices.SortFunc(scc, func(a, b *Selected) int { return slices.Index(rs, a) - slices.Index(rs, b) })
			out = append(out, scc)
		}
	}
	for _, r := range rs {
		if _, seen := index[r]; !seen {
			visit(r)
		}
	}
	slices.SortFunc(out, func(a, b []*Selected) int { return slices.Index(rs, a[0]) - slices.Index(rs, b[0]) })
	return out
}

// cycleProblem reports one cycle of a knot, from its first release back to
// it, each step with the FILE:LINE that declares it, at the first step's
// declaration; releases of the knot off that cycle are named too. The
// message names no Target, so that the Targets that share the cycle report
// it once.
func cycleProblem(out *Resolution, knot []*Selected, edges map[*Selected][]edge) {
	in := map[*Selected]bool{}
	for _, k := range knot {
		in[k] = true
	}
	start := knot[0]
	path := cyclePath(start, in, edges)
	var steps []string
	onPath := map[*Selected]bool{}
	for _, e := range path {
		onPath[e.to] = true
	}
	from := start
	for _, e := range path {
		steps = append(steps, fmt.Sprintf("%s (%s)", Name(from.Release), e.decl.at()))
		from = e.to
	}
	steps = append(steps, Name(start.Release))
	var also []string
	for _, k := range knot {
		if !onPath[k] {
			also = append(also, Name(k.Release))
		}
	}
	msg := "dependency cycle (each at the line that names the next): " + strings.Join(steps, " -> ")
	if len(also) > 0 {
		msg += "; in the same knot: " + strings.Join(also, ", ")
	}
	first := path[0].decl
	out.Problems.Errorf(first.obj.File, first.obj.LineOf(first.path), first.path, "%s; remove one of these dependencies", msg)
}

// cyclePath is a path of edges from start back to start within the knot in
// (it exists: the knot is strongly connected), found depth first.
func cyclePath(start *Selected, in map[*Selected]bool, edges map[*Selected][]edge) []edge {
	seen := map[*Selected]bool{}
	var path []edge
	var walk func(v *Selected) bool
	walk = func(v *Selected) bool {
		for _, e := range edges[v] {
			if !in[e.to] {
				continue
			}
			path = append(path, e)
			if e.to == start {
				return true
			}
			if !seen[e.to] {
				seen[e.to] = true
				if walk(e.to) {
					return true
				}
			}
			path = path[:len(path)-1]
		}
		return false
	}
	walk(start)
	return path
}
