// Package proctest holds the tests that run solar as a process and stop
// what it depends on or the process itself: SIGKILL at any moment of a
// render or a publish, two renders into one layout at once, the API server
// stopped mid-run. It has no code outside its tests.
package proctest
