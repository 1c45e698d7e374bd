package main

import (
	"os"

	"golang.org/x/term"
)

// isTerminal: w is a terminal (colour, a progress bar).
func isTerminal(w any) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// colorOn says whether to colour what goes to w: only on a terminal, never
// on a pipe, and never with NO_COLOR set (https://no-color.org).
func (g *globals) colorOn(w any) bool {
	return isTerminal(w) && os.Getenv("NO_COLOR") == ""
}
