package objdiff

import (
	"context"
	"fmt"
	"strings"
)

// Changes renders a chain before (old, as the store has it) and after (new,
// as a publish would make it) side by side and lists the objects that
// change. It descends into a HelmRelease only where what it is installed
// from differs between the two (the HelmRelease, its OCIRepository, its
// valuesFrom sources): helm-controller does not upgrade it otherwise,
// whatever its chart would render now (a generated certificate, a random
// password), and an unchanged release costs no render. A HelmRelease whose
// chart was not read or rendered on either side is left out of both (a note
// says why): half a release is not shown as deleted.
func Changes(ctx context.Context, before, after *Walker, old, new []byte) ([]Change, error) {
	rs := [2]*release{root(old, before), root(new, after)}
	if err := narrow(rs, after.Cache); err != nil {
		return nil, err
	}
	objs, err := walkPair(ctx, walkers{before, after}, docs{}, rs, 1)
	if err != nil {
		return nil, err
	}
	return Compare(objs[0], objs[1])
}

// walkPair renders rs[0] (before) and rs[1] (after), either nil when absent,
// at level, then the HelmReleases they render whose inputs differ; seen
// holds the documents the walk decoded.
func walkPair(ctx context.Context, ws walkers, seen docs, rs [2]*release, level int) ([2][]Object, error) {
	var objs [2][]Object
	for i, r := range rs {
		if r == nil {
			continue
		}
		o, err := render(ctx, *r, level, ws[i].Cache, seen)
		if err != nil {
			return objs, err
		}
		objs[i] = o
		if ws[i].Rendered != nil {
			ws[i].Rendered(level, r.ref, r.app, o)
		}
	}
	out := objs
	if level >= maxLevel {
		return out, nil
	}
	for _, key := range helmReleases(objs) {
		next, ok := ws.follow(ctx, key, objs)
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		if !ok {
			continue
		}
		children, err := walkPair(ctx, ws, seen, next, level+1)
		switch {
		case err != nil && ctx.Err() != nil:
			return out, ctx.Err()
		case err != nil && (next[0] != nil && !next[0].app || next[1] != nil && !next[1].app):
			return out, fmt.Errorf("HelmRelease %s: %w", key.name(), err)
		case err != nil:
			// Not Solar's chart: what it needs to render (a lookup of the
			// cluster, a value the cluster holds) may be missing here.
			ws[1].Notes = append(ws[1].Notes, Note{Release: key.name(), Reason: err.Error()})
			continue
		}
		out[0], out[1] = append(out[0], children[0]...), append(out[1], children[1]...)
	}
	return out, nil
}

// hrKey names a HelmRelease.
type hrKey struct{ namespace, hrName string }

func (k hrKey) name() string { return k.namespace + "/" + k.hrName }

// helmReleases are the HelmReleases of either side, after's order first.
func helmReleases(objs [2][]Object) []hrKey {
	var keys []hrKey
	seen := map[hrKey]bool{}
	for _, side := range []int{1, 0} {
		for _, o := range objs[side] {
			k := hrKey{o.Namespace, o.Name}
			if o.Kind == "HelmRelease" && strings.HasPrefix(o.APIVersion, "helm.toolkit.fluxcd.io/") && !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// walkers are the two sides of a pair walk.
type walkers [2]*Walker

// follow is, per side, the release a HelmRelease installs, its chart read;
// ok is false when there is nothing to descend into: its inputs are the same
// on both sides, or its chart was not read on a side (noted), or App is nil.
func (ws walkers) follow(ctx context.Context, key hrKey, objs [2][]Object) (next [2]*release, ok bool) {
	var inputs [2]string
	var hrs [2]Object
	for i, w := range ws {
		hr, found := find(objs[i], "HelmRelease", key.namespace, key.hrName)
		if !found {
			continue
		}
		r, input, err := w.prepare(hr, objs[i])
		if err != nil {
			w.note(hr, err)
			return next, false
		}
		next[i], inputs[i], hrs[i] = r, input, hr
	}
	if next[0] != nil && next[1] != nil && inputs[0] == inputs[1] {
		return next, false
	}
	for i, w := range ws {
		if next[i] == nil {
			continue
		}
		archive, app, err := w.read(ctx, next[i].ref)
		if err != nil {
			w.note(hrs[i], fmt.Errorf("the chart %s: %w", next[i].ref, err))
			return next, false
		}
		if archive == nil {
			return next, false
		}
		next[i].archive, next[i].app = archive, app
	}
	return next, true
}
