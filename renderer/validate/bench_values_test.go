package validate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/solar-pipeline/solar/renderer/load"
)

// BenchmarkVetValues100k validates one Release whose values hold 100,000
// keys: values are checked in Go, never unified in CUE.
func BenchmarkVetValues100k(b *testing.B) {
	var src strings.Builder
	src.WriteString("apiVersion: solar.opendefense.cloud/v1alpha1\nkind: Release\nmetadata: {name: big, namespace: ns}\n")
	src.WriteString("spec:\n  chart: {repository: registry.example.com/charts/big, tag: \"1.0.0\"}\n  values:\n")
	for i := range 100000 {
		fmt.Fprintf(&src, "    key%d: {value: %d, name: \"value %d\"}\n", i, i, i)
	}
	v, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		objs, problems := load.Bytes("release.yaml", []byte(src.String()), load.Options{})
		_, more := v.Validate(objs)
		if len(problems)+len(more) > 0 {
			b.Fatalf("problems: %v %v", problems, more)
		}
	}
}
