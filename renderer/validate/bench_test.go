package validate

import (
	"os/exec"
	"testing"

	"github.com/solar-pipeline/solar/renderer/load"
)

// BenchmarkVet10k is solar vet on 10,000 objects: load, schemas, references and
// policies. make bench runs it; docs/benchmarks.md has the figures.
func BenchmarkVet10k(b *testing.B) {
	benchVet(b, "-n", "10000")
}

// BenchmarkVet10kTargets is solar vet on 10,000 Targets, 100 per namespace,
// each bound to 5 Releases: 11,600 objects and the policies' 50,000 bindings.
func BenchmarkVet10kTargets(b *testing.B) {
	benchVet(b, "-targets", "10000", "-per", "100")
}

// benchVet validates the objects scripts/genobjects writes with args.
func benchVet(b *testing.B, args ...string) {
	dir := b.TempDir()
	if out, err := exec.Command("go", append([]string{"run", "../../scripts/genobjects", "-out", dir}, args...)...).CombinedOutput(); err != nil {
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
