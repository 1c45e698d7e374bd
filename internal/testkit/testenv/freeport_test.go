package testenv

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFreePortHeldFromOtherProcesses: a port FreePort gave stays locked for
// every other open of its file (as another test process's would be), and is
// never given twice.
func TestFreePortHeldFromOtherProcesses(t *testing.T) {
	seen := map[int]bool{}
	for range 50 {
		port := FreePort(t)
		require.False(t, seen[port], "port %d given twice", port)
		seen[port] = true
		other, ok := reserve(portLocks(t), port)
		if ok {
			other.Close()
		}
		require.False(t, ok, "another process could reserve port %d", port)
	}
}
