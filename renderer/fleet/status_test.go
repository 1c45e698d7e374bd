package fleet

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestListedDevices: every attempt.<id> and state.<id> key is a row, sorted;
// an id that is no valid device id is a Bad row per key kind, never read.
func TestListedDevices(t *testing.T) {
	keys := []string{"state.dev-2", "attempt.", "uuid.0b8e2c3a", "attempt.dev-2", "state.a.b", "state", "other.x", "attempt.dev-1"}
	ids, invalid := ListedDevices(keys)
	assert.Equal(t, []string{"", "a.b", "dev-1", "dev-2"}, ids)
	require.Len(t, invalid, 2)
	assert.Contains(t, invalid[""].AttemptError, `key "attempt.": invalid device id ""`)
	assert.Contains(t, invalid[""].StateError, `key "state": invalid device id ""`)
	assert.Contains(t, invalid["a.b"].StateError, `key "state.a.b": invalid device id "a.b"`)
	assert.Empty(t, invalid["a.b"].AttemptError)
}

// BenchmarkListedDevices: the keys of 100,000 devices (an attempt and a
// state each): each id once, not searched for among those before it.
func BenchmarkListedDevices(b *testing.B) {
	var keys []string
	for i := range 100000 {
		keys = append(keys, fmt.Sprintf("attempt.dev-%d", i), fmt.Sprintf("state.dev-%d", i))
	}
	for b.Loop() {
		if ids, _ := ListedDevices(keys); len(ids) != 100000 {
			b.Fatal(len(ids))
		}
	}
}
