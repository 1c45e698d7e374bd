package load

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIgnore(t *testing.T) {
	ig := parseIgnore([]string{"# comment", "", "*.tmp", "build/", "/top.yaml", "docs/**/draft-*.yaml", "keep*", "!keep-me.yaml"})
	for _, c := range []struct {
		rel   string
		dir   bool
		match bool
	}{
		{"a.tmp", false, true},
		{"deep/b.tmp", false, true},
		{"build", true, true},
		{"sub/build", true, true},
		{"build", false, false}, // build/ matches folders only
		{"top.yaml", false, true},
		{"sub/top.yaml", false, false}, // anchored
		{"docs/draft-1.yaml", false, true},
		{"docs/a/b/draft-2.yaml", false, true},
		{"docs/a/final.yaml", false, false},
		{"keep-it.yaml", false, true},
		{"keep-me.yaml", false, false}, // negated by the later line
		{"targets.yaml", false, false},
	} {
		assert.Equal(t, c.match, ig.match(c.rel, c.dir), c.rel)
	}
}
