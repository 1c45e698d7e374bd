// Package resolve decides what every Target gets: which Releases (through
// Profiles and ReleaseBindings), which of them win their uniqueName and survive
// anti-affinity, where their charts come from, and which pull secret each
// registry needs on the Target.
//
// It takes a model.Set of valid objects and returns a Plan; it is a pure function
// of its input and does no input or output. Example shows a use.
package resolve
