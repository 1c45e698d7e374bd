//go:build !killpoints

// Package killpoint names the moments at which the reliability tests kill a
// solar process on purpose, where no request to a server marks the moment
// (the steps of saving the OCI layout, of the device updater), and the calls
// they make fail (the updater's service stop and start). In the normal build
// Here and Fail do nothing and are inlined away; a binary built with
// -tags killpoints kills itself with SIGKILL at the point named by
// SOLAR_KILLPOINT, and fails the call named by SOLAR_FAILPOINT
// (killpoint_on.go).
package killpoint

// Here marks a point a test may kill the process at.
func Here(string) {}

// Fail marks a call a test may make fail: it returns the error to fail with,
// or nil.
func Fail(string) error { return nil }
