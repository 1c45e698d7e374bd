package main

import (
	"io"
	"unicode/utf8"
)

// streamTable writes the table that write writes (cells ended by a tab,
// rows by a newline) in newTable's columns, without holding it: write is
// called twice, first to measure each column, then to write each row as
// it comes. The table of a report of 100,000 Targets has 600,000 rows,
// which a tabwriter holds until it is flushed (100 MB).
func streamTable(out io.Writer, write func(w io.Writer)) {
	m := &tableCells{}
	write(m)
	write(&tableCells{out: out, widths: m.widths})
}

// tablePadding is the spaces after a column's widest cell (newTable's).
const tablePadding = 2

// tableCells measures the columns of what is written to it (widths, out
// nil) or writes it to out, each cell but a row's last padded to its
// column's width.
type tableCells struct {
	out    io.Writer
	widths []int
	// column and width are the cell being written: its column, and its
	// width so far in characters (as tabwriter counts: runes).
	column, width int
}

func (t *tableCells) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := 0
		for i < len(p) && p[i] != '\t' && p[i] != '\n' {
			i++
		}
		t.width += utf8.RuneCount(p[:i])
		if t.out != nil {
			if _, err := t.out.Write(p[:i]); err != nil {
				return 0, err
			}
		}
		if i == len(p) {
			break
		}
		t.end(p[i])
		p = p[i+1:]
	}
	return n, nil
}

// end ends the cell being written with c: a tab (the next column follows)
// or a newline (the row ends).
func (t *tableCells) end(c byte) {
	if c == '\n' {
		t.column, t.width = 0, 0
		if t.out != nil {
			_, _ = t.out.Write([]byte{'\n'})
		}
		return
	}
	if t.out == nil {
		if t.column == len(t.widths) {
			t.widths = append(t.widths, 0)
		}
		t.widths[t.column] = max(t.widths[t.column], t.width)
	} else {
		pad := t.widths[t.column] + tablePadding - t.width
		for ; pad > 0; pad -= len(spaces) {
			_, _ = t.out.Write([]byte(spaces[:min(pad, len(spaces))]))
		}
	}
	t.column, t.width = t.column+1, 0
}

const spaces = "                                "
