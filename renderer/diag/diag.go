// Package diag holds the problems every stage reports about user input: where
// (file, line, field path) and what. They print one per line as
// FILE:LINE[:COL]: FIELD.PATH: message, the format of solar's CLI contract.
package diag

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Severity says whether a problem fails the run.
type Severity string

const (
	// Error fails the run: nothing is rendered or published.
	Error Severity = "error"
	// Warning is reported and does not change the exit code.
	Warning Severity = "warning"
)

// Problem is one finding about the input. Path is the dotted field path inside the
// object (spec.targetSelector.matchExpressions[0].operator), empty when the problem
// concerns the whole file or document. Column, 1-based, is 0 where only the line is
// known (a problem of a whole object, a policy's); JSON leaves it out then.
type Problem struct {
	File     string   `json:"file"`
	Line     int      `json:"line"`
	Column   int      `json:"column,omitempty"`
	Path     string   `json:"path"`
	Message  string   `json:"message"`
	Severity Severity `json:"severity"`
}

// String formats the problem as FILE:LINE[:COL]: FIELD.PATH: message, as
// compilers and cue vet print positions; a warning's message starts with
// "warning: ".
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
		if p.Column > 0 {
			fmt.Fprintf(&b, ":%d", p.Column)
		}
	}
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	if p.Severity == Warning {
		b.WriteString("warning: ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// List is a set of problems.
type List []Problem

// Errorf adds an error at a line.
func (l *List) Errorf(file string, line int, path, format string, args ...any) {
	l.Addf(Error, file, line, 0, path, format, args...)
}

// Warnf adds a warning at a line.
func (l *List) Warnf(file string, line int, path, format string, args ...any) {
	l.Addf(Warning, file, line, 0, path, format, args...)
}

// Addf adds a problem of severity sev at a line and column (0: unknown).
func (l *List) Addf(sev Severity, file string, line, col int, path, format string, args ...any) {
	*l = append(*l, Problem{File: file, Line: line, Column: col, Path: path, Message: fmt.Sprintf(format, args...), Severity: sev})
}

// Count is the number of problems of severity s: the summaries' "3 problems
// (1 error)", vet's "2 warnings".
func (l List) Count(s Severity) int {
	n := 0
	for _, p := range l {
		if p.Severity == s {
			n++
		}
	}
	return n
}

// HasErrors reports whether any problem is an error.
func (l List) HasErrors() bool {
	return slices.ContainsFunc(l, func(p Problem) bool { return p.Severity == Error })
}

// Sorted returns the problems ordered by file, line, column and path, without duplicates.
func (l List) Sorted() List {
	out := slices.Clone(l)
	slices.SortStableFunc(out, func(a, b Problem) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Column, b.Column),
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Message, b.Message),
		)
	})
	return slices.Compact(out)
}
