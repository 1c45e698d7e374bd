package objdiff

import (
	"context"
	"fmt"
	"slices"
)

// Changes renders a chain before (old, as the store has it) and after (new,
// as a publish would make it) and lists the objects that change. A
// HelmRelease's subtree is left out of both sides when its chart was not
// read or rendered on either (a note says why: half a release is not shown
// as deleted), and when it is installed from the same inputs on both sides:
// helm-controller does not upgrade it then, whatever its chart would render
// now (a generated certificate, a random password).
func Changes(ctx context.Context, before, after *Walker, old, new []byte) ([]Change, error) {
	a, err := before.Walk(ctx, old)
	if err != nil {
		return nil, fmt.Errorf("as the store has it: %w", err)
	}
	b, err := after.Walk(ctx, new)
	if err != nil {
		return nil, fmt.Errorf("as publish would make it: %w", err)
	}
	skip := map[string]bool{}
	for _, w := range []*Walker{before, after} {
		for k := range w.failed {
			skip[k] = true
		}
	}
	for k, in := range before.inputs {
		if out, ok := after.inputs[k]; ok && out == in {
			skip[k] = true
		}
	}
	return Compare(keep(a, skip), keep(b, skip))
}

// keep are the objects not under a HelmRelease of skip.
func keep(objs []Object, skip map[string]bool) []Object {
	return slices.DeleteFunc(slices.Clone(objs), func(o Object) bool {
		return slices.ContainsFunc(o.under, func(k string) bool { return skip[k] })
	})
}
