package english

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n          int
		noun, want string
	}{
		{0, "Target", "0 Targets"},
		{1, "Target", "1 Target"},
		{2, "Target", "2 Targets"},
		{1, "problem", "1 problem"},
		{3, "problem", "3 problems"},
		{1, "repository", "1 repository"},
		{2, "repository", "2 repositories"},
		{2, "key", "2 keys"},
		{2, "namespace index", "2 namespace indexes"},
		{2, "match", "2 matches"},
		{2, "bus", "2 buses"},
	} {
		assert.Equal(t, c.want, Count(c.n, c.noun))
	}
}
