// Package validate checks loaded objects in three steps and reports every problem
// at once: the CUE schemas of schemas/ (types, names, selectors, unknown fields),
// then references between objects (a Profile naming a missing Release, a
// cross-namespace reference no ReferenceGrant allows, ...) and what a schema
// cannot say (a Rollout's cron schedules and time zones, its waves, two
// Rollouts that govern one Target), then the CUE policies
// of policies/ and of any directory the user adds.
//
// It takes []*load.Object and returns a model.Set of the valid objects (an
// object with only warnings is valid) and the problems, each with file, line,
// column where known and field path. Every schema error passes through one
// table (messages.go) that says it in words: the value, what is wanted and,
// where likely, the fix; a shape the table does not know keeps CUE's text.
//
//	v, err := validate.New(validate.Options{PolicyDirs: []string{"my-policies"}})
//	set, problems := v.Validate(objs)
//	if problems.HasErrors() { ... }
package validate
