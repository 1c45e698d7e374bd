package objdiff

import (
	"bytes"
	"reflect"
	"slices"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// narrow loads the two bootstrap charts of a pair and, when they differ only
// in some of their releases, leaves the others out of both: what a release
// that is the same on both sides renders is the same on both sides, so it is
// no change, and its HelmRelease, installed from the same inputs, is not
// followed. Solar's bootstrap chart renders each entry of .Values.releases on
// its own, from the entry and the values beside the list
// (TestBootstrapReleasesRenderAlone holds it to that); so narrowing applies
// only where both charts have the same templates and the same values but the
// list. A bootstrap chart of a Target with 20 releases of which one changed
// renders one release a side, not twenty. The releases are left out of
// copies: the loaded charts may be shared (Cache).
func narrow(rs [2]*release, cache *Cache) error {
	if rs[0] == nil || rs[1] == nil {
		return nil
	}
	var chs [2]*chartv2.Chart
	for i, r := range rs {
		ch, err := cache.load(r.archive, false)
		if err != nil {
			return err
		}
		chs[i] = ch
	}
	lists, ok := releaseLists(chs)
	if !ok || !sameTemplates(chs[0], chs[1]) {
		return nil
	}
	kept := [2][]any{{}, {}}
	for i, list := range lists {
		for _, e := range list {
			if !slices.ContainsFunc(lists[1-i], func(o any) bool { return reflect.DeepEqual(e, o) }) {
				kept[i] = append(kept[i], e)
			}
		}
	}
	for i, ch := range chs {
		c := *ch
		c.Values = make(map[string]any, len(ch.Values))
		for k, v := range ch.Values {
			c.Values[k] = v
		}
		c.Values["releases"] = kept[i]
		rs[i].chart = &c
	}
	return nil
}

// releaseLists are the two charts' .Values.releases; ok is false unless
// both are lists and every other value is the same on both sides.
func releaseLists(chs [2]*chartv2.Chart) (lists [2][]any, ok bool) {
	for i, ch := range chs {
		if lists[i], ok = ch.Values["releases"].([]any); !ok {
			return lists, false
		}
	}
	a, b := chs[0].Values, chs[1].Values
	if len(a) != len(b) {
		return lists, false
	}
	for k, v := range a {
		if w, found := b[k]; k != "releases" && (!found || !reflect.DeepEqual(v, w)) {
			return lists, false
		}
	}
	return lists, true
}

// sameTemplates reports whether two charts have the same templates, which
// read neither .Chart (its version differs) nor .Files, and neither has
// dependencies.
func sameTemplates(a, b *chartv2.Chart) bool {
	if len(a.Dependencies()) > 0 || len(b.Dependencies()) > 0 || len(a.Templates) != len(b.Templates) {
		return false
	}
	for i, t := range a.Templates {
		u := b.Templates[i]
		if t.Name != u.Name || !bytes.Equal(t.Data, u.Data) || bytes.Contains(t.Data, []byte(".Chart")) || bytes.Contains(t.Data, []byte(".Files")) {
			return false
		}
	}
	return true
}
