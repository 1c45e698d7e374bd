package pipeline

import (
	"fmt"
	"strings"
)

// ChangeGroup is one change to an object, alike on many Targets: Shown, on
// its Targets, and Others, the same change on other Targets whose object
// and diff differ from Shown's only where each names its own Target (its
// name, its namespace): Solar names a Target's HelmReleases, and so their
// objects, after it, so that one values change of a Release many Targets
// get is one group, not one diff per Target.
type ChangeGroup struct {
	Shown  ObjectChange
	Others []ObjectChange
}

// Targets is how many Targets the group's change is on.
func (g ChangeGroup) Targets() int {
	n := len(g.Shown.Targets)
	for _, o := range g.Others {
		n += len(o.Targets)
	}
	return n
}

// GroupChanges groups changes alike but for their Targets' names, in the
// order of their first.
func GroupChanges(changes []ObjectChange) []ChangeGroup {
	var out []ChangeGroup
	for _, g := range groupAlike(changes, func(c ObjectChange) string {
		return alikeKey(fmt.Sprintf("%s\x00%s\x00%d\x00%s\x00%s", c.Action, c.Object.Key(), c.Level, c.APIVersion, c.Diff), c.Targets)
	}) {
		out = append(out, ChangeGroup{Shown: g[0], Others: g[1:]})
	}
	return out
}

// ChartGroup is one change to a chart's files, alike on many charts: Shown
// and Others, the charts whose repository, versions and diffs differ from
// Shown's only where each names its own Target (a bootstrap chart's values).
type ChartGroup struct {
	Shown  ChartDiff
	Others []ChartDiff
}

// GroupCharts groups chart diffs alike but for their Targets' names, in the
// order of their first.
func GroupCharts(charts []ChartDiff) []ChartGroup {
	var out []ChartGroup
	for _, g := range groupAlike(charts, func(c ChartDiff) string {
		var text strings.Builder
		fmt.Fprintf(&text, "%s\x00%s\x00%s\x00%s", c.Repository, c.From, c.To, c.Token)
		for _, f := range c.Files {
			fmt.Fprintf(&text, "\x00%s\x00%s", f.Name, f.Diff)
		}
		return alikeKey(text.String(), c.Targets)
	}) {
		out = append(out, ChartGroup{Shown: g[0], Others: g[1:]})
	}
	return out
}

// groupAlike groups items by key, each group in the order of its first
// item, the items of a group in their order.
func groupAlike[T any](items []T, key func(T) string) [][]T {
	var out [][]T
	index := map[string]int{}
	for _, it := range items {
		k := key(it)
		if i, ok := index[k]; ok {
			out[i] = append(out[i], it)
			continue
		}
		index[k] = len(out)
		out = append(out, []T{it})
	}
	return out
}

// alikeKey is text with the name and the namespace its Targets share (where
// all of them share one) put out of it.
func alikeKey(key string, targets []string) string {
	// Whether all share one: the first against each other, not a list of
	// the distinct ones searched (a change every Target gets has them all).
	var name, namespace string
	oneName, oneNamespace := len(targets) > 0, len(targets) > 0
	for i, t := range targets {
		ns, n, _ := strings.Cut(t, "/")
		if i == 0 {
			name, namespace = n, ns
		}
		oneName = oneName && n == name
		oneNamespace = oneNamespace && ns == namespace
	}
	tokens := map[string]string{}
	if oneName {
		tokens[name] = "\x01"
	}
	if oneNamespace && tokens[namespace] == "" {
		tokens[namespace] = "\x02"
	}
	// The longer first: a name that holds the namespace (or the other way
	// round) is put out whole.
	for len(tokens) > 0 {
		longest := ""
		for t := range tokens {
			if len(t) > len(longest) {
				longest = t
			}
		}
		key = replaceToken(key, longest, tokens[longest])
		delete(tokens, longest)
	}
	return key
}

// replaceToken replaces tok in s where it stands as a word of a name: not
// inside a longer run of letters and digits ("edge-1" in "site-edge-1-app"
// and "edge-1.example", not in "edge-10").
func replaceToken(s, tok, with string) string {
	if tok == "" {
		return s
	}
	var b strings.Builder
	from := 0 // s[:from] is written
	for at := 0; at <= len(s)-len(tok); {
		i := strings.Index(s[at:], tok)
		if i < 0 {
			break
		}
		i += at
		end := i + len(tok)
		if (i == 0 || !alnum(s[i-1])) && (end == len(s) || !alnum(s[end])) {
			b.WriteString(s[from:i])
			b.WriteString(with)
			from, at = end, end
			continue
		}
		at = i + 1
	}
	b.WriteString(s[from:])
	return b.String()
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
