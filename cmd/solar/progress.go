package main

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/solar-pipeline/solar/internal/english"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

// meter is the progress of the command's long work: a bar redrawn in place
// on stderr when it is a terminal, with the count, the rate and the time
// left; nothing on a pipe (with -v, a line per Target). It remembers how far
// the work got, for the message an interrupt gets.
type meter struct {
	mu          sync.Mutex
	unit        string
	done, total int
	// first is when the first step was reported, and how many were done
	// then: the rate counts from it, not from the setup before.
	first     time.Time
	firstDone int
	last      time.Time
}

// progress reports each finished Target (render, publish).
func (g *globals) progress() func(done, total int, t pipeline.TargetReport) {
	step := g.meter("Target")
	return func(done, total int, t pipeline.TargetReport) {
		if g.verbose && !isTerminal(g.stderr) && t.Name != "" {
			fmt.Fprintf(g.stderr, "[%d/%d] %s/%s %s %s\n", done, total, t.Namespace, t.Name, t.Version, would(g.dryRun, t.Action))
		}
		step(done, total)
	}
}

// meter starts counting work in unit, singular ("repository" for verify
// and push, "device" for fleet apply); the func it returns is called with each step.
func (g *globals) meter(unit string) func(done, total int) {
	m := &meter{unit: unit}
	g.work = m
	tty := !g.quiet && isTerminal(g.stderr)
	return func(done, total int) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.done, m.total = done, total
		now := time.Now()
		if m.first.IsZero() {
			m.first, m.firstDone = now, done
		}
		// A redraw at most every 100 ms, and the last one.
		if !tty || total == 0 || (done < total && now.Sub(m.last) < 100*time.Millisecond) {
			return
		}
		m.last = now
		fmt.Fprint(g.stderr, "\r"+m.line(now))
		if done == total {
			fmt.Fprintln(g.stderr)
		}
	}
}

// line is the bar: "[#####.....] 120/1000 Targets  40.1/s  ETA 22s".
func (m *meter) line(now time.Time) string {
	const width = 30
	n := width * m.done / m.total
	line := fmt.Sprintf("[%s%s] %d/%s", strings.Repeat("#", n), strings.Repeat(".", width-n), m.done, english.Count(m.total, m.unit))
	elapsed := now.Sub(m.first).Seconds()
	if m.done == m.firstDone || elapsed <= 0 {
		return line + "\x1b[K"
	}
	rate := float64(m.done-m.firstDone) / elapsed
	line += fmt.Sprintf("  %.1f/s", rate)
	if m.done < m.total {
		left := time.Duration(float64(m.total-m.done) / rate * float64(time.Second))
		line += "  ETA " + left.Round(time.Second).String()
	} else {
		line += "  in " + now.Sub(m.first).Round(time.Millisecond).String()
	}
	// Clear what a longer line before left.
	return line + "\x1b[K"
}

// interruption is err as the user reads it: when a signal stopped the
// command (its context is done), how far the work got instead of the error of
// the request the signal cut short (which names an upload URL).
func (g *globals) interruption(err error) error {
	var r reported
	var exit exitError
	if err == nil || g.ctx == nil || g.ctx.Err() == nil || errors.As(err, &r) || errors.As(err, &exit) {
		return err
	}
	return errors.New(g.interrupted())
}

// interrupted says how far the work got when a signal stopped it.
func (g *globals) interrupted() string {
	what := "what was finished stays; run again to continue"
	if g.dryRun {
		what = "nothing was written"
	}
	m := g.work
	if m == nil {
		return "interrupted: " + what
	}
	g.endBar()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.total == 0 {
		return "interrupted: " + what
	}
	return fmt.Sprintf("interrupted after %d of %s: %s", m.done, english.Count(m.total, m.unit), what)
}

// endBar ends a bar left unfinished (an error, an interrupt), so that what
// follows starts on its own line.
func (g *globals) endBar() {
	m := g.work
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.last.IsZero() && m.done < m.total {
		fmt.Fprintln(g.stderr)
		m.last = time.Time{}
	}
}
