package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/published"
	"github.com/solar-pipeline/solar/renderer/store"
)

// finish prints the report (even a partial one, so nothing done goes unsaid)
// and returns the error or exit code it calls for; registry names the store
// in registry errors.
func (g *globals) finish(report *pipeline.Report, registry string, err error) error {
	if err != nil {
		err = hint(g.interruption(err), registry)
		report.Error = err.Error()
	}
	// A dry run stays one when the input stopped it before any store was
	// asked: its summary still says that nothing was written.
	report.DryRun = report.DryRun || g.dryRun
	g.endBar()
	if perr := g.printReport(report, chartsTable); perr != nil && err == nil {
		err = perr
	}
	g.log.Info("plan", report.Summary()...)
	if !g.quiet {
		fmt.Fprintln(g.stderr, report.SummaryLine())
	}
	if err != nil {
		return reported{err}
	}
	if report.Problems.HasErrors() {
		return exitError{code: 1}
	}
	return nil
}

// newTable is a table writer in the columns every table of solar has:
// aligned, two spaces apart, as kubectl's.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, tablePadding, ' ', 0)
}

// header writes a table's header line, unless --no-headers.
func (g *globals) header(w io.Writer, line string) {
	if !g.noHeaders {
		fmt.Fprintln(w, line)
	}
}

// would is an action as a dry run says it: "would create", "would update";
// "unchanged" stays.
func would(dryRun bool, action string) string {
	if dryRun && action != "" && action != publish.Unchanged && !strings.HasPrefix(action, pipeline.Held) {
		return "would " + action
	}
	return action
}

// printProblems writes problems on stderr, the conversation: errors always,
// warnings unless -q. (With -o json or yaml they are in the document.)
func (g *globals) printProblems(problems diag.List) {
	for _, p := range problems {
		if p.Severity == diag.Warning && g.quiet {
			continue
		}
		fmt.Fprintln(g.stderr, p)
	}
}

// printData writes v as JSON (-o json) or YAML (-o yaml), one document.
func (g *globals) printData(v any) error {
	if g.output == "yaml" {
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = g.stdout.Write(b)
		return err
	}
	return writeJSON(g.stdout, v)
}

// writeJSON writes v as the JSON document of -o json: indented by two
// spaces, a newline at the end.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printable is s as a terminal may show it: as it is when every character is
// printable, else (escapes, newlines, tabs, invalid UTF-8) quoted with Go's
// escapes ("\x1b[2J"), so that no string from a store or a device acts on
// the terminal or breaks a table's line. Empty, and a string that starts
// with a quote, are quoted too: a quoted cell always means escaped.
func printable(s string) string {
	if s == "" || strings.HasPrefix(s, `"`) || !utf8.ValidString(s) ||
		strings.IndexFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// cut is s cut to n characters, the last an ellipsis when it was longer.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// short is the first 12 hex digits of a digest.
func short(d string) string {
	_, hex, _ := strings.Cut(d, ":")
	return hex[:min(12, len(hex))]
}

// hint names the registry in a registry error and adds the flag that helps.
func hint(err error, registry string) error {
	switch {
	case errors.Is(err, store.ErrDenied):
		return fmt.Errorf("registry %s: %w (check --username/--password-stdin or the credentials of the docker config)", registry, err)
	case errors.Is(err, store.ErrUntrusted):
		return fmt.Errorf("registry %s: %w (pass --ca-file, or --plain-http for a plain HTTP registry)", registry, err)
	case errors.Is(err, store.ErrPlainHTTP):
		return fmt.Errorf("registry %s: %w (pass --plain-http)", registry, err)
	case errors.Is(err, store.ErrUnreachable):
		return fmt.Errorf("registry %s: %w", registry, err)
	}
	return err
}

// say writes a line of the conversation on stderr, unless -q.
func (g *globals) say(format string, args ...any) {
	if !g.quiet {
		fmt.Fprintf(g.stderr, format+"\n", args...)
	}
}

// bytesHuman is n bytes in the largest binary unit that keeps it at least 1.
func bytesHuman(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// orEmpty is s, or an empty slice for nil: -o json writes lists as [], never
// null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// storeError says where a command found no repository to work on (the
// layout out, or else the registry HOST/PREFIX), and which flags to check;
// other errors get the registry hint.
func (g *globals) storeError(err error, verb, out, registry string) error {
	switch {
	case errors.Is(err, store.ErrNoLayout):
		return fmt.Errorf("nothing to %s: %w (check --out)", verb, err)
	case !errors.Is(err, published.ErrNoRepository):
		return hint(err, registry)
	}
	where := registry
	if out != "" {
		where = "the layout " + out
	}
	if g.namespace != "" {
		where += ", namespace " + g.namespace
	}
	return fmt.Errorf("nothing to %s: %w in %s (check --out, --registry and -n)", verb, err, where)
}
