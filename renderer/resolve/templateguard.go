package resolve

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/solar-pipeline/solar/internal/helmyaml"
)

// formatters turn a value into text that is safe in YAML; an action that
// ends in one of them prints what it returns (toYaml's only on one line).
var formatters = map[string]bool{"toYaml": true, "toJson": true, "quote": true, "indent": true, "nindent": true}

const (
	scalarFunc  = "solarScalar"
	oneLineFunc = "solarOneLine"
	stepFunc    = "solarStep"
	// MaxTemplateBuilt bounds what one rendering's functions build in all:
	// a template that calls itself keeps each level's strings.
	MaxTemplateBuilt = 16 << 20
)

// rendering is what one execution of a valuesTemplate may still spend:
// bytes its functions build, and whether its caller still waits (stop
// closed: no). One execution runs on one goroutine.
type rendering struct {
	built int
	stop  <-chan struct{}
}

// errStopped ends an execution its caller no longer waits for.
var errStopped = errors.New("stopped: the deadline passed")

// funcs are the functions a valuesTemplate may call, bound to one
// rendering. Every one that builds a string, the builtins among them,
// refuses a result over MaxTemplateOutput, before it builds it where its
// size can be told, and counts what it built: a string grown in a loop or
// in a template that calls itself would otherwise fill memory before the
// deadline.
func (r *rendering) funcs() template.FuncMap {
	escaper := func(escape func(...any) string) func(...any) (string, error) {
		return func(a ...any) (string, error) { return r.build(sizeOf(a), func() string { return escape(a...) }) }
	}
	return template.FuncMap{
		"toYaml": func(v any) (yamlText, error) {
			b, err := helmyaml.Marshal(v)
			if err != nil {
				return "", err
			}
			out, err := r.build(0, func() string { return strings.TrimSuffix(string(b), "\n") })
			return yamlText(out), err
		},
		"toJson": func(v any) (string, error) {
			b, err := json.Marshal(v)
			if err != nil {
				return "", err
			}
			return r.build(0, func() string { return noApostrophe(string(b)) })
		},
		"quote": func(v any) (string, error) {
			return r.build(sizeOf([]any{v}), func() string { return noApostrophe(strconv.Quote(fmt.Sprint(v))) })
		},
		"indent":  func(n int, v any) (string, error) { return r.indent(n, v, "") },
		"nindent": func(n int, v any) (string, error) { return r.indent(n, v, "\n") },
		"printf": func(format string, a ...any) (string, error) {
			width, ok := widths(format)
			if !ok {
				return "", fmt.Errorf("printf: a width or precision of 10000 or more, one taken from the arguments, or an argument index ([n]) is not allowed")
			}
			return r.build(len(format)+width+sizeOf(a), func() string { return fmt.Sprintf(format, a...) })
		},
		"print":     func(a ...any) (string, error) { return r.build(sizeOf(a), func() string { return fmt.Sprint(a...) }) },
		"println":   func(a ...any) (string, error) { return r.build(sizeOf(a), func() string { return fmt.Sprintln(a...) }) },
		"html":      escaper(template.HTMLEscaper),
		"js":        escaper(template.JSEscaper),
		"urlquery":  escaper(template.URLQueryEscaper),
		scalarFunc:  scalar,
		oneLineFunc: oneLine,
		stepFunc:    r.step,
	}
}

// build makes a string of at least about want bytes (what can be told
// before it is built: 0 for nothing), refuses it when that is already too
// much, and counts what it built against the rendering.
func (r *rendering) build(want int, of func() string) (string, error) {
	if want > MaxTemplateOutput {
		return "", errTooLong
	}
	if r.built+want > MaxTemplateBuilt {
		return "", errBuiltTooMuch
	}
	s := of()
	if len(s) > MaxTemplateOutput {
		return "", errTooLong
	}
	if r.built += len(s); r.built > MaxTemplateBuilt {
		return "", errBuiltTooMuch
	}
	return s, nil
}

// step is nothing while the caller waits, then an error that ends the
// execution where it is.
func (r *rendering) step() (string, error) {
	select {
	case <-r.stop:
		return "", errStopped
	default:
		return "", nil
	}
}

var (
	errTooLong      = fmt.Errorf("the output is longer than %d bytes", MaxTemplateOutput)
	errBuiltTooMuch = fmt.Errorf("the template's functions built more than %d bytes", MaxTemplateBuilt)
)

// sizeOf is about how many bytes the values print as: strings and byte
// slices by their length, maps and lists by their JSON, other values a
// little.
func sizeOf(a []any) int {
	n := 0
	for _, v := range a {
		switch v := v.(type) {
		case string:
			n += len(v)
		case []byte:
			n += 4 * len(v)
		default:
			switch reflect.ValueOf(v).Kind() {
			case reflect.Map, reflect.Slice, reflect.Array, reflect.Struct:
				b, _ := json.Marshal(v) // user data: at most its input's size
				n += len(b)
			default:
				n += 24
			}
		}
	}
	return n
}

// lineBreaks are what YAML takes for a line break, Go's "\n" and "\r" and
// the three Unicode ones go-yaml reads as breaks too.
var lineBreaks = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u0085", "\n", "\u2028", "\n", "\u2029", "\n")

// indent puts n spaces before each line of v, after lead; every YAML line
// break counts as one, so no line escapes the indentation. Text that is not
// toYaml's must be plain line by line: a quote or a key in it could take
// the template's own lines that follow, or change the value's shape.
func (r *rendering) indent(n int, v any, lead string) (string, error) {
	s := lineBreaks.Replace(fmt.Sprint(v))
	if _, ok := v.(yamlText); !ok {
		for line := range strings.SplitSeq(s, "\n") {
			if err := plain(line); err != nil {
				return "", err
			}
		}
	}
	if n < 0 || n > MaxTemplateOutput {
		return "", errTooLong
	}
	return r.build(len(lead)+len(s)+(strings.Count(s, "\n")+1)*n, func() string {
		pad := strings.Repeat(" ", n)
		return lead + pad + strings.ReplaceAll(s, "\n", "\n"+pad)
	})
}

// verb is a printf verb's width and precision; wide is one of five digits
// or more, or taken from the arguments (fmt builds up to a million bytes
// for each such verb).
var (
	verb = regexp.MustCompile(`%[-+# 0]*(?:\[\d+\])?(\*|\d*)(?:\.(?:\[\d+\])?(\*|\d*))?`)
	wide = regexp.MustCompile(`^(\*|\d{5,})$`)
)

// widths adds up the widths and precisions of a printf format, false if
// one is too wide or a verb names its argument.
func widths(format string) (int, bool) {
	n := 0
	for _, m := range verb.FindAllStringSubmatch(format, -1) {
		if strings.Contains(m[0], "[") {
			return 0, false // an index prints an argument again and again
		}
		for _, w := range m[1:] {
			if wide.MatchString(w) {
				return 0, false
			}
			d, _ := strconv.Atoi(w)
			n += d
		}
	}
	return n, true
}

// unsafeError: a value printed as it is could add keys to the values.
type unsafeError struct{ msg string }

func (e *unsafeError) Error() string { return e.msg }

// scalar lets through what prints safely as a plain YAML scalar wherever it
// stands (a block or a flow collection, a quoted string): a map, a list, a
// string with a line break or with YAML's structure characters printed as
// it is could add keys to the values or change their shape.
func scalar(v any) (any, error) {
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.String:
		return v, plain(rv.String())
	case reflect.Map, reflect.Slice, reflect.Array, reflect.Struct:
		return nil, &unsafeError{"a map or list printed as it is: pipe it through toYaml or toJson"}
	}
	return v, nil
}

// Characters that begin or end YAML structure: anywhere in a line (a flow
// collection, a quoted string around the action), or at a plain scalar's
// start only.
const (
	anywhere = "{}[],\"'\\"
	atStart  = "@%&*!|>#`"
)

const structureMessage = "a string with YAML's structure characters printed as it is could change the values (" +
	anywhere + " anywhere; " + atStart + ", \"- \", \"? \", \"---\" first; \": \" or \" #\" inside; blanks around): pipe it through quote or toJson"

// plain is nil for a string that YAML reads as the one plain scalar it
// is wherever the action stands.
func plain(s string) error {
	if strings.ContainsAny(s, "\n\r\u0085\u2028\u2029") {
		return &unsafeError{"a multi-line string printed as it is could add keys to the values: pipe it through toYaml, toJson or quote"}
	}
	blank := func(i int) bool { return i >= len(s) || s[i] == ' ' || s[i] == '\t' }
	indicator := len(s) > 0 && (strings.IndexByte(atStart, s[0]) >= 0 || strings.IndexByte("-?:", s[0]) >= 0 && blank(1))
	if indicator || s != strings.Trim(s, " \t") || strings.ContainsAny(s, anywhere) ||
		strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") || strings.HasSuffix(s, ":") ||
		strings.Contains(s, ": ") || strings.Contains(s, ":\t") || strings.Contains(s, " #") || strings.Contains(s, "\t#") ||
		strings.IndexFunc(s, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) >= 0 {
		return &unsafeError{structureMessage}
	}
	return nil
}

// yamlText is what toYaml printed: YAML that indent and nindent move as it
// is; any other text they move line by line must be plain.
type yamlText string

// oneLine lets through a toYaml that printed one line: a map, a list or a
// multi-line string in YAML must go through nindent to keep its place.
func oneLine(v any) (any, error) {
	if strings.Contains(fmt.Sprint(v), "\n") {
		return nil, &unsafeError{"toYaml of a map, list or multi-line string printed where it stands could add keys: pipe it through nindent"}
	}
	return v, nil
}

// parseTemplate parses a valuesTemplate for one rendering and guards every
// template in it (the main one and each define or block, which are called
// as they are): every action that prints a value without a formatter checks
// that the value is a plain scalar, toYaml printed as it is that it is one
// line, and each template call and loop iteration begins with a step, where
// an execution its caller stopped waiting for ends.
func parseTemplate(text string, r *rendering) (*template.Template, error) {
	tmpl, err := template.New("valuesTemplate").Option("missingkey=error").Funcs(r.funcs()).Parse(text)
	if err != nil {
		return nil, err
	}
	for _, t := range tmpl.Templates() {
		if t.Tree != nil && t.Tree.Root != nil {
			guard(t.Tree, t.Tree.Root)
			stepFirst(t.Tree, t.Tree.Root)
		}
	}
	return tmpl, nil
}

func guard(tree *parse.Tree, n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n != nil {
			for _, c := range n.Nodes {
				guard(tree, c)
			}
		}
	case *parse.IfNode:
		guard(tree, n.List)
		guard(tree, n.ElseList)
	case *parse.RangeNode:
		guard(tree, n.List)
		guard(tree, n.ElseList)
		if n.List != nil {
			stepFirst(tree, n.List)
		}
	case *parse.WithNode:
		guard(tree, n.List)
		guard(tree, n.ElseList)
	case *parse.ActionNode:
		cmds := n.Pipe.Cmds
		if len(n.Pipe.Decl) > 0 || len(cmds) == 0 {
			return
		}
		check := scalarFunc
		if id, ok := cmds[len(cmds)-1].Args[0].(*parse.IdentifierNode); ok && formatters[id.Ident] {
			if id.Ident != "toYaml" {
				return
			}
			check = oneLineFunc
		}
		n.Pipe.Cmds = append(cmds, call(tree, check, n.Pos))
	}
}

// stepFirst makes the list begin with an action that calls the execution's
// step function and prints the nothing it returns.
func stepFirst(tree *parse.Tree, l *parse.ListNode) {
	step := &parse.ActionNode{NodeType: parse.NodeAction, Pos: l.Pos,
		Pipe: &parse.PipeNode{NodeType: parse.NodePipe, Pos: l.Pos, Cmds: []*parse.CommandNode{call(tree, stepFunc, l.Pos)}}}
	l.Nodes = append([]parse.Node{step}, l.Nodes...)
}

func call(tree *parse.Tree, name string, pos parse.Pos) *parse.CommandNode {
	id := parse.NewIdentifier(name).SetTree(tree).SetPos(pos)
	return &parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos, Args: []parse.Node{id}}
}

// noApostrophe escapes ' in quote's and toJson's double-quoted text, so it
// stays one value inside a single-quoted string around the action too.
func noApostrophe(s string) string { return strings.ReplaceAll(s, "'", `\u0027`) }
