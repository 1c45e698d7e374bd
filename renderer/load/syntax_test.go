package load

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSyntaxErrorPosition: a YAML syntax error is reported at the line and
// column where the file stops being YAML, not at the decoder's line (one line
// early, or the start of the enclosing mapping) without a column.
func TestSyntaxErrorPosition(t *testing.T) {
	for name, tc := range map[string]struct{ src, want string }{
		"bad indentation": {"apiVersion: v1\nkind: Target\nmetadata:\n  name: a\n   namespace: b\nspec: {}\n",
			"f.yaml:5:13: syntax error: mapping values are not allowed in this context"},
		"dedented key": {"apiVersion: v1\nkind: Target\nmetadata:\n  name: a\n  labels:\n    a: b\n   c: d\nspec: {}\n",
			"f.yaml:7:4: syntax error: did not find expected key"},
		"unclosed quote": {"apiVersion: v1\nkind: Target\nmetadata:\n  name: \"a\n  namespace: b\n",
			"f.yaml:4:9: syntax error: unclosed quote: the string that starts here has no closing \""},
		"tab": {"apiVersion: v1\nkind: Target\nmetadata:\n\tname: a\n",
			"f.yaml:4:1: syntax error: found character that cannot start any token: a tab; YAML indents with spaces only"},
		"unclosed flow mapping": {"apiVersion: v1\nkind: Target\nmetadata:\n  name: a\n  labels: {a: b\nspec: {}\n",
			"f.yaml:5:12: syntax error: did not find expected ',' or '}'"},
		"second document": {"a: 1\n---\napiVersion: v1\nkind: Target\nmetadata:\n  name: \"x\"y\n",
			"f.yaml:6:12: syntax error: did not find expected key"},
		"first line": {"a: b: c\n", "f.yaml:1:5: syntax error: mapping values are not allowed in this context"},
	} {
		t.Run(name, func(t *testing.T) {
			_, problems := Bytes("f.yaml", []byte(tc.src), Options{})
			if assert.Len(t, problems, 1) {
				assert.Equal(t, tc.want, problems[0].String())
			}
		})
	}
}
