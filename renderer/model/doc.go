// Package model holds the typed SolAr objects and the lookups every stage shares:
// objects by kind, namespace and name, the one table of references between
// kinds (References) with ReferenceGrant checks for cross-namespace ones,
// label selectors, and the bindings of Releases to Targets that Profiles and
// ReleaseBindings make (computed once per Set).
//
// It takes objects that passed schema validation (load.Object) and returns a Set;
// it does no input or output. Example shows a use.
package model
