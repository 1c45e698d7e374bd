package load

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The YAML decoder's syntax errors name one line and no column, and the line
// is often not where the problem is: a parser error names the 0-based line of
// the construct it was parsing (one line early, or the line before the
// enclosing mapping), a scanner error the 1-based line where a quoted scalar
// began. The decoder is the judge of what is valid YAML, so syntaxError asks it
// again: the problem is where the shortest failing prefix of the document ends.
// That costs a few decodes of one document, and only when a file is broken.

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// nearLines are the lines after the decoder's that are tried one by one;
// beyond them a binary search finds the line. maxSearchColumns and
// maxSearchBytes (decoded in all) bound the search; beyond them, the line
// found so far, or the decoder's, is reported without a column.
const (
	nearLines        = 20
	maxSearchColumns = 1000
	maxSearchBytes   = 8 << 20
)

// syntaxError returns the 1-based line and column (0: unknown) of a syntax
// error of the decoder in data, and its message in plain words.
func syntaxError(data []byte, err error) (line, col int, msg string) {
	reported, msg := decoderError(err)
	line, col = locate(data, reported, msg)
	if line == 0 {
		line = reported
	}
	return line, col, explain(data, line, col, msg)
}

// decoderError splits the decoder's error into its line and message. Without
// a line, the decoder's position was line 0: the first line.
func decoderError(err error) (line int, msg string) {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		return line, m[2]
	}
	return 1, strings.TrimPrefix(err.Error(), "yaml: ")
}

// locate finds the line and column where the shortest prefix of data that
// fails with msg ends, searching from the line before the reported one.
func locate(data []byte, reported int, msg string) (line, col int) {
	starts := lineStarts(data)
	first := max(1, reported-1)
	doc := docStart(data, starts, first)
	budget := maxSearchBytes
	// fails reports whether the document up to the end of line l fails.
	fails := func(end int) bool {
		budget -= end - doc
		return failsWith(data[doc:end], msg)
	}
	lineEnd := func(l int) int {
		if l < len(starts) {
			return starts[l]
		}
		return len(data)
	}
	line = 0
	for l := first; l <= len(starts) && l < first+nearLines; l++ {
		if fails(lineEnd(l)) {
			line = l
			break
		}
	}
	if line == 0 && first+nearLines <= len(starts) {
		// The decoder named the start of a long construct: the first
		// failing line is further on. A prefix that fails keeps failing as
		// it grows, as the errors users make go.
		lo, hi := first+nearLines, len(starts)
		for lo < hi && budget > 0 {
			mid := lo + (hi-lo)/2
			if fails(lineEnd(mid)) {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		if budget > 0 && fails(lineEnd(lo)) {
			line = lo
		}
	}
	if line == 0 || budget <= 0 {
		return 0, 0
	}
	start := starts[line-1]
	for c := 1; c <= min(lineEnd(line)-start, maxSearchColumns) && budget > 0; c++ {
		if fails(start + c) {
			return line, c
		}
	}
	return line, 0
}

// docStart returns the offset of the document that holds line: the line of its
// "---", or the start of data. Earlier documents decoded without error, so the
// search decodes only this one.
func docStart(data []byte, starts []int, line int) int {
	for l := min(line, len(starts)); l >= 1; l-- {
		if bytes.HasPrefix(data[starts[l-1]:], []byte("---")) {
			return starts[l-1]
		}
	}
	return 0
}

// lineStarts returns the byte offset of the start of every line.
func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, b := range data {
		if b == '\n' && i+1 < len(data) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// failsWith reports whether decoding data fails with the message msg.
func failsWith(data []byte, msg string) bool {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return false
		}
		if err != nil {
			_, got := decoderError(err)
			return got == msg
		}
	}
}

// explain adds to the decoder's message what the character at the position
// says about the likely cause.
func explain(data []byte, line, col int, msg string) string {
	starts := lineStarts(data)
	if line < 1 || line > len(starts) || col < 1 {
		return msg
	}
	text := data[starts[line-1]:]
	if i := bytes.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	if col > len(text) {
		return msg
	}
	switch c := text[col-1]; {
	case c == '\t':
		return msg + ": a tab; YAML indents with spaces only"
	case (c == '"' || c == '\'') && msg == "found unexpected end of stream":
		return "unclosed quote: the string that starts here has no closing " + string(c)
	}
	return msg
}
