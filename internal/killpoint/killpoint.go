//go:build !killpoints

// Package killpoint names the moments at which the reliability tests kill a
// solar process on purpose, where no request to a server marks the moment
// (the steps of saving the OCI layout). In the normal build Here does nothing
// and is inlined away; a binary built with -tags killpoints kills itself with
// SIGKILL at the point named by SOLAR_KILLPOINT (killpoint_on.go).
package killpoint

// Here marks a point a test may kill the process at.
func Here(string) {}
