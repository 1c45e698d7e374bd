package validate

import (
	"os/exec"
	"testing"

	"github.com/solar-pipeline/solar/renderer/load"
)

// BenchmarkVet10k is solar vet on 10,000 objects: load, schemas, references and
// policies. make bench runs it; docs/benchmarks.md has the figures.
func BenchmarkVet10k(b *testing.B) {
	dir := b.TempDir()
	if out, err := exec.Command("go", "run", "../../scripts/genobjects", "-n", "10000", "-out", dir).CombinedOutput(); err != nil {
		b.Fatalf("generating objects: %v\n%s", err, out)
	}
	v, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		objs, problems, _ := load.Paths([]string{dir}, load.Options{})
		_, more := v.Validate(objs)
		if len(problems)+len(more) > 0 || len(objs) < 10000 {
			b.Fatalf("%d objects, problems: %v %v", len(objs), problems, more)
		}
	}
}
