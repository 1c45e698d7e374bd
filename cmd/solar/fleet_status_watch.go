package main

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/solar-pipeline/solar/renderer/fleet"
)

// statusWatch prints fleet status --watch: the listing as fleet status
// prints it (-o json|yaml: one document per device), then a row or a
// document per change.
type statusWatch struct {
	g      *globals
	bucket string
	// header: the header line was printed; widths are the table's column
	// widths so far, to align the rows of changes with it.
	header bool
	widths []int
	// docs is how many documents were printed (YAML separates them).
	docs int
}

// listed prints the devices of the listing and names on stderr those the
// bucket could not read or does not know: watched all the same, they do
// not fail the watch.
func (p *statusWatch) listed(st []fleet.Status) error {
	known, bad, notFound := splitStatus(st)
	switch p.g.output {
	case "name":
		for _, s := range known {
			fmt.Fprintln(p.g.stdout, printable(s.DeviceID))
		}
	case "text":
		now := time.Now()
		if err := p.g.statusTable(known, now); err != nil {
			return err
		}
		if len(known) > 0 && !p.g.noHeaders {
			p.header = true
			p.grow(statusHeader)
		}
		for _, s := range known {
			p.grow(statusRow(s, now))
		}
	default:
		for _, s := range known {
			if err := p.document(s); err != nil {
				return err
			}
		}
	}
	if err := statusErrors(p.bucket, bad, notFound, len(st)); err != nil {
		fmt.Fprintf(p.g.stderr, "solar: %v; watching them all the same\n", err)
	}
	return nil
}

// changed prints a device that changed: its row, aligned with the table
// (and after a header, if none was printed yet), or its document.
func (p *statusWatch) changed(s fleet.Status) error {
	switch p.g.output {
	case "name":
		_, err := fmt.Fprintln(p.g.stdout, printable(s.DeviceID))
		return err
	case "json", "yaml":
		return p.document(s)
	}
	row := statusRow(s, time.Now())
	header := !p.header && !p.g.noHeaders // the listing printed no table
	if header {
		p.header = true
		p.grow(statusHeader)
	}
	p.grow(row)
	out := p.line(row)
	if header {
		out = p.line(statusHeader) + out
	}
	_, err := fmt.Fprint(p.g.stdout, out)
	return err
}

// document prints a device as one JSON or YAML document of the stream.
func (p *statusWatch) document(s fleet.Status) error {
	if p.g.output == "yaml" && p.docs > 0 {
		if _, err := fmt.Fprintln(p.g.stdout, "---"); err != nil {
			return err
		}
	}
	p.docs++
	return p.g.printData(s)
}

// grow widens the columns to the cells of a line; the last cell (REASON)
// is not padded, as tabwriter does not pad it.
func (p *statusWatch) grow(cells []string) {
	for len(p.widths) < len(cells)-1 {
		p.widths = append(p.widths, 0)
	}
	for i, c := range cells[:len(cells)-1] {
		p.widths[i] = max(p.widths[i], utf8.RuneCountInString(c))
	}
}

// line is a line of the table, padded as statusTable's tabwriter pads it.
func (p *statusWatch) line(cells []string) string {
	var b strings.Builder
	for i, c := range cells {
		b.WriteString(c)
		if i < len(cells)-1 {
			b.WriteString(strings.Repeat(" ", p.widths[i]-utf8.RuneCountInString(c)+2))
		}
	}
	b.WriteString("\n")
	return b.String()
}
