package load

import (
	"bufio"
	"bytes"
	"path"
	"strings"
)

// IgnoreFile is the file of a walked directory whose lines (gitignore syntax)
// leave out files and folders below it.
const IgnoreFile = ".solarignore"

// ignore is a list of gitignore patterns, the last match deciding.
type ignore []rule

type rule struct {
	pattern  string
	negate   bool
	dirOnly  bool
	anchored bool // matches the whole relative path, not any base name
}

// parseIgnore reads gitignore lines: # comments, ! negation, a trailing /
// for folders only, a / at the start or inside anchors the pattern to the
// walked directory, and *, ?, [...] and ** as in git.
func parseIgnore(lines []string) ignore {
	var out ignore
	for _, l := range lines {
		l = strings.TrimRight(l, " \t\r")
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		var r rule
		if strings.HasPrefix(l, "!") {
			r.negate, l = true, l[1:]
		}
		if strings.HasSuffix(l, "/") {
			r.dirOnly, l = true, strings.TrimSuffix(l, "/")
		}
		r.anchored = strings.Contains(l, "/")
		r.pattern = strings.TrimPrefix(l, "/")
		if r.pattern != "" {
			out = append(out, r)
		}
	}
	return out
}

func readIgnore(data []byte) ignore {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return parseIgnore(lines)
}

// match reports whether rel (a slash path relative to the walked directory)
// is left out.
func (ig ignore) match(rel string, isDir bool) bool {
	out := false
	for _, r := range ig {
		if r.dirOnly && !isDir {
			continue
		}
		var ok bool
		if r.anchored {
			ok = matchSegments(strings.Split(r.pattern, "/"), strings.Split(rel, "/"))
		} else {
			ok, _ = path.Match(r.pattern, path.Base(rel))
		}
		if ok {
			out = !r.negate
		}
	}
	return out
}

// matchSegments matches path segments against pattern segments, ** standing
// for any number of segments.
func matchSegments(pat, segs []string) bool {
	if len(pat) == 0 {
		return len(segs) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(segs); i++ {
			if matchSegments(pat[1:], segs[i:]) {
				return true
			}
		}
		return false
	}
	if len(segs) == 0 {
		return false
	}
	ok, _ := path.Match(pat[0], segs[0])
	return ok && matchSegments(pat[1:], segs[1:])
}
