package load

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLinesOfSmallAndLargeObjects: objects of one shape share their fields'
// paths, and an object with more fields than a scan takes finds each line
// all the same.
func TestLinesOfSmallAndLargeObjects(t *testing.T) {
	var doc strings.Builder
	for _, name := range []string{"a", "b"} {
		fmt.Fprintf(&doc, "---\napiVersion: solar.opendefense.cloud/v1alpha1\nkind: Target\nmetadata: {name: %s}\nspec:\n  userdata: {x: 1}\n", name)
	}
	doc.WriteString("---\napiVersion: solar.opendefense.cloud/v1alpha1\nkind: Target\nmetadata: {name: c}\nspec:\n  userdata:\n")
	for i := range 2 * scanned {
		fmt.Fprintf(&doc, "    k%03d: %d\n", i, i)
	}
	objs, problems := Bytes("t.yaml", []byte(doc.String()), Options{Namespace: "ns"})
	require.Empty(t, problems)
	require.Len(t, objs, 3)

	a, b, c := objs[0], objs[1], objs[2]
	assert.Equal(t, a.lines.paths, b.lines.paths, "objects of one shape share their paths")
	assert.Equal(t, 6, a.LineOf("spec.userdata.x"))
	assert.Equal(t, 12, b.LineOf("spec.userdata.x"))
	assert.Equal(t, 10, b.LineOf("metadata.name"))

	require.NotNil(t, c.lines.large, "more fields than a scan takes")
	assert.Equal(t, 19, c.LineOf("spec.userdata.k000"))
	assert.Equal(t, 19+2*scanned-1, c.LineOf(fmt.Sprintf("spec.userdata.k%03d", 2*scanned-1)))
	assert.Equal(t, 18, c.LineOf("spec.userdata.missing"), "the nearest field that exists")
	line, col := c.PosOf("spec.userdata.k005")
	assert.Equal(t, []int{24, 5}, []int{line, col})
}
