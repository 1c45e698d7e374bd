package main

import (
	"bytes"
	"fmt"
	"os"
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

// watchPeakHeap keeps the heap profile of the largest live heap seen after a
// collection, looking every 10 ms. The returned function stops watching and
// gives that profile.
func watchPeakHeap() (stop func() []byte) {
	done := make(chan struct{})
	var profile bytes.Buffer
	var wg sync.WaitGroup
	wg.Go(func() {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var peak uint64
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			if live := sample[0].Value.Uint64(); live > peak {
				peak = live
				profile.Reset()
				if err := pprof.Lookup("heap").WriteTo(&profile, 0); err != nil {
					fmt.Fprintln(os.Stderr, "solar: heap profile:", err)
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
