package chart

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/action"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// BenchmarkPackage packages one bootstrap chart of examples/ in memory: the
// .tgz and the OCI config.
func BenchmarkPackage(b *testing.B) {
	src := sources(testenv.ExamplesPlan(b))["bootstrap-edge-2"]
	b.ReportAllocs()
	for b.Loop() {
		_, err := src.Package("0.0.1", Options{})
		require.NoError(b, err)
	}
}

// BenchmarkHelmPackageBaseline is the baseline for BenchmarkPackage: Helm's
// own packager (helm package, in process) on the same chart, from a
// directory to a .tgz file, as a hand-rolled job does it.
func BenchmarkHelmPackageBaseline(b *testing.B) {
	pkg, err := sources(testenv.ExamplesPlan(b))["bootstrap-edge-2"].Package("0.0.1", Options{})
	require.NoError(b, err)
	dir := b.TempDir()
	require.NoError(b, chartutil.Expand(dir, bytes.NewReader(pkg.Archive)))
	p := action.NewPackage()
	p.Destination = b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		_, err := p.Run(filepath.Join(dir, pkg.Name), nil)
		require.NoError(b, err)
	}
}
