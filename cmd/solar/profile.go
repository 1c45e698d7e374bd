package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"time"
)

// startProfiles writes the profiles that the environment asks for, so a run at
// the user's scale can be profiled end to end (docs/benchmarks.md):
// SOLAR_CPUPROFILE, SOLAR_MEMPROFILE (the live heap at its peak: what bounds
// the peak RSS) and SOLAR_TRACE name the files. The returned function stops
// them and writes the heap profile.
func startProfiles() (stop func(), err error) {
	var stops []func() error
	stop = func() {
		for _, s := range stops {
			if err := s(); err != nil {
				fmt.Fprintln(os.Stderr, "solar: writing a profile:", err)
			}
		}
	}
	if name := os.Getenv("SOLAR_CPUPROFILE"); name != "" {
		f, err := os.Create(name)
		if err != nil {
			return stop, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return stop, err
		}
		stops = append(stops, func() error { pprof.StopCPUProfile(); return f.Close() })
	}
	if name := os.Getenv("SOLAR_TRACE"); name != "" {
		f, err := os.Create(name)
		if err != nil {
			return stop, err
		}
		if err := trace.Start(f); err != nil {
			return stop, err
		}
		stops = append(stops, func() error { trace.Stop(); return f.Close() })
	}
	if name := os.Getenv("SOLAR_MEMPROFILE"); name != "" {
		peak := watchPeakHeap()
		stops = append(stops, func() error { return os.WriteFile(name, peak(), 0o644) })
	}
	return stop, nil
}

// watchPeakHeap keeps the heap profile whose live bytes are the largest, looking
// after each collection (every 10 ms; the runtime publishes a profile a
// collection or two after the heap it shows). The returned function stops
// watching and gives that profile.
func watchPeakHeap() (stop func() []byte) {
	done := make(chan struct{})
	var profile bytes.Buffer
	var wg sync.WaitGroup
	wg.Go(func() {
		cycles := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
		var seen uint64
		var peak int64 = -1
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(cycles)
			if n := cycles[0].Value.Uint64(); n != seen {
				seen = n
				if live := profiledLiveBytes(); live > peak {
					peak = live
					profile.Reset()
					if err := pprof.Lookup("heap").WriteTo(&profile, 0); err != nil {
						fmt.Fprintln(os.Stderr, "solar: heap profile:", err)
					}
				}
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() []byte {
		close(done)
		wg.Wait()
		return profile.Bytes()
	}
}

// profiledLiveBytes is the live bytes the heap profile now shows: its samples
// scaled up to the allocations they stand for, as pprof shows them.
func profiledLiveBytes() int64 {
	n, _ := runtime.MemProfile(nil, true)
	records := make([]runtime.MemProfileRecord, n+64)
	n, ok := runtime.MemProfile(records, true)
	if !ok {
		return -1
	}
	rate := float64(runtime.MemProfileRate)
	var live float64
	for _, r := range records[:n] {
		if r.AllocObjects == 0 || r.InUseBytes() == 0 {
			continue
		}
		// A sample of average size a stands for 1/(1-e^(-a/rate)) of them.
		size := float64(r.AllocBytes) / float64(r.AllocObjects)
		live += float64(r.InUseBytes()) / (1 - math.Exp(-size/rate))
	}
	return int64(live)
}
