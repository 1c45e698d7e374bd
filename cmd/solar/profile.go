package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
)

// startProfiles writes the profiles that the environment asks for, so a run at
// the user's scale can be profiled end to end (docs/benchmarks.md):
// SOLAR_CPUPROFILE, SOLAR_MEMPROFILE (the heap at exit) and SOLAR_TRACE name the
// files. The returned function stops them and writes the heap profile.
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
		stops = append(stops, func() error {
			f, err := os.Create(name)
			if err != nil {
				return err
			}
			runtime.GC()
			if err := pprof.WriteHeapProfile(f); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		})
	}
	return stop, nil
}
