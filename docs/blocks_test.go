package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A marker is the HTML comment on the line right before a fenced block; it
// renders as nothing on GitHub:
//
//	<!-- run -->              run the block with bash; it must exit 0
//	<!-- run exit=2 -->       ... and exit 2 (solar's --exit-code)
//	<!-- run exit=1 expect="TEXT" -->
//	                          ... and print TEXT (stdout or stderr)
//	<!-- norun: REASON -->    a command block that cannot run here, and why
//	<!-- env -->              the variables the reader sets; the test sets
//	                          them to its own services instead (see vars)
//	<!-- file: PATH -->       write the block (any language) to PATH in the
//	                          working directory, when the run reaches it
//
// Every block of a shell language carries run, norun or env.
type marker struct {
	kind   string // run, norun, env, file; "" when there is none
	exit   int    // run: the exit code expected
	expect string // run: what the output must contain, when set
	reason string // norun
	path   string // file
}

// block is one fenced code block and its marker.
type block struct {
	file string // relative to the repository root
	line int    // of the opening fence
	lang string
	text string
	mark marker
}

func (b block) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// shellLangs are the languages of blocks a reader may paste into a shell:
// each one must say whether it runs.
var shellLangs = []string{"sh", "bash", "shell", "console", "zsh"}

var (
	markerRE = regexp.MustCompile(`^\s*<!--\s*(run|norun|env|file)\b(.*?)-->\s*$`)
	fenceRE  = regexp.MustCompile("^(\\s*)(```+)\\s*([^\\s`]*)")
)

// parse returns the fenced blocks of a Markdown file, in order, with their
// markers; a marker that is not right before a fence, or that does not
// parse, is an error.
func parse(file, text string) ([]block, error) {
	lines := strings.Split(text, "\n")
	var blocks []block
	var pending *marker
	pendingLine := 0
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := markerRE.FindStringSubmatch(line); m != nil {
			mk, err := parseMarker(m[1], m[2])
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, i+1, err)
			}
			pending, pendingLine = &mk, i+1
			continue
		}
		f := fenceRE.FindStringSubmatch(line)
		if f == nil {
			if pending != nil {
				return nil, fmt.Errorf("%s:%d: a marker must be on the line right before a ``` fence", file, pendingLine)
			}
			continue
		}
		b := block{file: file, line: i + 1, lang: f[3]}
		if pending != nil {
			b.mark = *pending
			pending = nil
		}
		indent, fence := f[1], f[2]
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != fence; i++ {
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		if i == len(lines) {
			return nil, fmt.Errorf("%s: the block at line %d is not closed", file, b.line)
		}
		b.text = strings.Join(body, "\n") + "\n"
		blocks = append(blocks, b)
	}
	if pending != nil {
		return nil, fmt.Errorf("%s:%d: a marker must be on the line right before a ``` fence", file, pendingLine)
	}
	return blocks, nil
}

func parseMarker(kind, rest string) (marker, error) {
	m := marker{kind: kind}
	rest = strings.TrimSpace(rest)
	switch kind {
	case "norun":
		m.reason = strings.TrimSpace(strings.TrimPrefix(rest, ":"))
		if !strings.HasPrefix(rest, ":") || m.reason == "" {
			return m, fmt.Errorf("norun needs a reason: <!-- norun: REASON -->")
		}
	case "file":
		m.path = strings.TrimSpace(strings.TrimPrefix(rest, ":"))
		if !strings.HasPrefix(rest, ":") || m.path == "" || filepath.IsAbs(m.path) || strings.HasPrefix(filepath.Clean(m.path), "..") {
			return m, fmt.Errorf("file needs a relative path inside the working directory: <!-- file: PATH -->")
		}
	case "env":
		if rest != "" {
			return m, fmt.Errorf("env takes nothing: <!-- env -->")
		}
	case "run":
		return parseRun(m, rest)
	}
	return m, nil
}

var attrRE = regexp.MustCompile(`^(\w+)=("[^"]*"|[^\s"]+)\s*`)

// parseRun reads the attributes of a run marker: exit=CODE, expect="TEXT".
func parseRun(m marker, rest string) (marker, error) {
	for rest != "" {
		a := attrRE.FindStringSubmatch(rest)
		if a == nil {
			return m, fmt.Errorf("run takes exit=CODE and expect=\"TEXT\", not %q", rest)
		}
		rest = rest[len(a[0]):]
		switch a[1] {
		case "exit":
			code, err := strconv.Atoi(a[2])
			if err != nil || code < 0 || code > 255 {
				return m, fmt.Errorf("exit=%s: not an exit code", a[2])
			}
			m.exit = code
		case "expect":
			m.expect = strings.Trim(a[2], `"`)
		default:
			return m, fmt.Errorf("run takes exit=CODE and expect=\"TEXT\", not %s=", a[1])
		}
	}
	return m, nil
}

// docFiles are the documents whose blocks are checked: README.md and
// docs/*.md, relative to root.
func docFiles(root string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	out := []string{"README.md"}
	for _, f := range files {
		rel, err := filepath.Rel(root, f)
		if err != nil {
			return nil, err
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out, nil
}

// parseFile reads and parses one document of root.
func parseFile(root, file string) ([]block, error) {
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		return nil, err
	}
	return parse(file, string(b))
}

var assignRE = regexp.MustCompile(`(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=`)

// assigned are the variables an env block sets, comments left out.
func assigned(text string) []string {
	var names []string
	for _, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		for _, m := range assignRE.FindAllStringSubmatch(line, -1) {
			names = append(names, m[1])
		}
	}
	return names
}

// uses reports whether a block refers to the variable name.
func uses(text, name string) bool {
	return regexp.MustCompile(`\$\{?` + name + `\b`).MatchString(text)
}

// pathLine puts the solar that make build leaves in bin/ on PATH.
const pathLine = `export PATH="$PWD/bin:$PATH"`

// bareSolar finds a command solar (not bin/solar).
var bareSolar = regexp.MustCompile(`(?m)(?:^|[\s|;&(])solar\s`)

// check returns what is wrong with the markers of one document's blocks:
// a shell block without a marker, a run marker on a block bash cannot run,
// an env block setting a variable the test does not provide, a run block
// using a provided variable that no env block before it introduced, a run
// block calling solar before a block put bin/ on PATH (make build leaves it
// there, and nothing else puts it on a reader's PATH).
func check(blocks []block) []string {
	var problems []string
	introduced := map[string]bool{}
	onPath := false
	for _, b := range blocks {
		if b.mark.kind == "run" && slices.Contains([]string{"sh", "bash", "shell"}, b.lang) && !onPath && bareSolar.MatchString(b.text) && !strings.Contains(b.text, pathLine) {
			problems = append(problems, fmt.Sprintf("%s: the block calls solar, which is not on a reader's PATH: run %s in it or a block before it (or call bin/solar)", b, pathLine))
		}
		onPath = onPath || b.mark.kind == "run" && strings.Contains(b.text, pathLine)
		shell := slices.Contains(shellLangs, b.lang)
		switch {
		case b.mark.kind == "" && shell:
			problems = append(problems, fmt.Sprintf("%s: a ```%s block without a marker: put <!-- run --> or <!-- norun: REASON --> on the line before it", b, b.lang))
		case (b.mark.kind == "run" || b.mark.kind == "env") && !slices.Contains([]string{"sh", "bash", "shell"}, b.lang):
			problems = append(problems, fmt.Sprintf("%s: <!-- %s --> on a ```%s block: only sh, bash and shell blocks run", b, b.mark.kind, b.lang))
		case b.mark.kind == "norun" && !shell:
			problems = append(problems, fmt.Sprintf("%s: <!-- norun --> on a ```%s block, which never runs: leave it unmarked", b, b.lang))
		case b.mark.kind == "env":
			for _, name := range assigned(b.text) {
				if _, ok := vars[name]; !ok {
					problems = append(problems, fmt.Sprintf("%s: the env block sets %s, which the test does not provide (it provides %s)", b, name, strings.Join(varNames(), ", ")))
				}
				introduced[name] = true
			}
		case b.mark.kind == "run":
			for _, name := range varNames() {
				if uses(b.text, name) && !introduced[name] {
					problems = append(problems, fmt.Sprintf("%s: the block uses $%s, which no <!-- env --> block before it introduces", b, name))
				}
			}
		}
	}
	return problems
}
