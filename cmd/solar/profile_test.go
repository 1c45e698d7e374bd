package main

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMemProfileIsThePeak: SOLAR_MEMPROFILE holds the heap at its peak (what
// bounds the RSS), not at exit, when what made the peak is gone.
func TestMemProfileIsThePeak(t *testing.T) {
	const big = 64 << 20
	stop := watchPeakHeap()
	peak := make([]byte, big)
	for i := range peak {
		peak[i] = byte(i)
	}
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	runtime.KeepAlive(peak)
	peak = nil
	runtime.GC()
	runtime.GC() // the heap profile lags a cycle behind
	time.Sleep(50 * time.Millisecond)
	p, err := profile.Parse(bytes.NewReader(stop()))
	require.NoError(t, err)
	inuse := -1
	for i, st := range p.SampleType {
		if st.Type == "inuse_space" {
			inuse = i
		}
	}
	require.GreaterOrEqual(t, inuse, 0, "a heap profile")
	var total int64
	for _, s := range p.Sample {
		total += s.Value[inuse]
	}
	assert.GreaterOrEqual(t, total, int64(big), "the profile holds the 64 MB slice live at the peak")
}
