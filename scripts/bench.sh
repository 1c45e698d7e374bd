#!/usr/bin/env bash
# bench.sh: what users run, end to end, beside what they would run instead, in
# one go (make bench builds bin/solar and the tools first):
#  1. solar vet against plain `cue vet` with the same schemas, on the same
#     synthetic tree of N (10,000) objects: wall-clock seconds (best of RUNS);
#  2. one Release with 100,000 value keys;
#  3. the in-process render benchmark (a diagnosis) against `helm package`;
#  4. scripts/bench: vet, render and publish at SIZES Targets (100 per
#     namespace, 5 Releases each) against the real registry behind a counting
#     proxy, cold, no-op and 1 % changed, with the helm package + helm push
#     loop as the baseline; then the 5-per-namespace shape at 1,000 Targets;
#  5. solar diff of DIFF (500) Targets after a values change every Target
#     gets, beside render --dry-run of the same change, with the ratios.
#   scripts/bench.sh
#   SIZES=100,1000,10000 scripts/bench.sh     (the 10,000 step takes minutes)
#   SIZES=100000 scripts/bench.sh             (about an hour: the cold publish)
#   N=20000 RUNS=5 scripts/bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-10000}
RUNS=${RUNS:-3}
BIN=$(scripts/install-tools.sh)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go run ./scripts/genobjects -n "$N" -out "$dir"

best() { # best wall-clock seconds of RUNS runs of a command
  local best=""
  for _ in $(seq "$RUNS"); do
    local s e
    s=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    e=$(date +%s.%N)
    best=$(echo "$e $s ${best:-1e9}" | awk '{d=$1-$2; print (d<$3)?d:$3}')
  done
  echo "$best"
}

objects=$(cat "$dir"/*.yaml | grep -c '^kind:')
solar=$(best bin/solar vet "$dir")
cue=$(best "$BIN/cue" vet -c -d '#Object' schemas/*.cue "$dir"/*.yaml)
printf 'objects: %s\n' "$objects"
printf 'solar vet (schemas, references, policies): %.2fs\n' "$solar"
printf 'cue vet -c -d #Object (schemas only):      %.2fs\n' "$cue"
printf 'ratio solar/cue: %.2f\n' "$(echo "$solar $cue" | awk '{print $1/$2}')"
/usr/bin/time -f '%M' -o "$dir/rss" bin/solar vet "$dir" >/dev/null 2>&1
printf 'solar vet peak RSS: %d MB\n' "$(( $(cat "$dir/rss") / 1024 ))"

# One Release whose values hold 100,000 keys (4 MB): values are data, checked
# in Go, not unified in CUE. The baseline, plain cue vet, gets at most 120 s.
big="$dir/big/release.yaml"
mkdir -p "$dir/big"
{
  printf 'apiVersion: solar.opendefense.cloud/v1alpha1\nkind: Release\nmetadata: {name: big, namespace: ns}\n'
  printf 'spec:\n  chart: {repository: registry.example.com/charts/big, tag: "1.0.0"}\n  values:\n'
  seq 100000 | awk '{printf "    key%d: {value: %d, name: \"value %d\"}\n", $1, $1, $1}'
} >"$big"
s=$(date +%s.%N)
/usr/bin/time -f '%M' -o "$dir/rss" bin/solar vet "$big" >/dev/null 2>&1
e=$(date +%s.%N)
printf '\nsolar vet, one Release with 100,000 value keys (%d bytes): %.2fs, peak RSS %d MB\n' \
  "$(stat -c %s "$big")" "$(echo "$e $s" | awk '{print $1-$2}')" "$(( $(cat "$dir/rss") / 1024 ))"
s=$(date +%s.%N)
if timeout 120 "$BIN/cue" vet -c -d '#Object' schemas/*.cue "$big" >/dev/null 2>&1; then
  e=$(date +%s.%N)
  printf 'cue vet -c -d #Object on the same file: %.2fs\n' "$(echo "$e $s" | awk '{print $1-$2}')"
else
  printf 'cue vet -c -d #Object on the same file: did not finish within 120 s\n'
fi

# Render: 10,000 Targets × 5 Releases rendered, packaged and written to an OCI
# layout in process (BenchmarkRender10kTargets), with the peak RSS of that
# process, against the baseline a hand-rolled job uses: one `helm package` per
# chart.
go test -c -o "$dir/pipeline.test" ./renderer/pipeline
bench=$(cd renderer/pipeline && /usr/bin/time -f '%M' -o "$dir/rss" \
  "$dir/pipeline.test" -test.run '^$' -test.bench Render10k -test.benchtime 1x -test.benchmem | grep '^Benchmark')
solar_cps=$(echo "$bench" | awk '{for (i=1;i<=NF;i++) if ($i=="charts/s") print $(i-1)}')
bin/solar render --no-credentials --out "$dir/layout" examples/ >/dev/null 2>&1
chart=$(find "$dir/layout" -path "*/blobs/*" -type f -size +1k | head -1)
mkdir -p "$dir/chart" && tar -xzf "$chart" -C "$dir/chart"
K=${K:-100}
s=$(date +%s.%N)
for i in $(seq "$K"); do "$BIN/helm" package "$dir/chart"/* -d "$dir/pkg" >/dev/null; done
e=$(date +%s.%N)
helm_cps=$(echo "$s $e $K" | awk '{print $3/($2-$1)}')
printf '\n%s\n' "$bench"
printf 'render peak RSS: %d MB\n' "$(( $(cat "$dir/rss") / 1024 ))"
printf 'solar render: %s charts/s; helm package (one process per chart, %d charts): %.1f charts/s; ratio %.0f\n' \
  "$solar_cps" "$K" "$helm_cps" "$(echo "$solar_cps $helm_cps" | awk '{print $1/$2}')"

# End to end against the real registry (docs/benchmarks.md has the table).
SIZES=${SIZES:-100,1000}
printf '\nEnd to end, 100 Targets per namespace, 5 Releases each:\n'
go run ./scripts/bench -solar bin/solar -targets "$SIZES" -per 100 -helm 10
printf '\nEnd to end, 5 Targets per namespace:\n'
go run ./scripts/bench -solar bin/solar -targets 1000 -per 5 -helm 0 -skip vet
printf '\nsolar diff beside render --dry-run of the same change, 100 Targets per namespace:\n'
go run ./scripts/bench -solar bin/solar -diff "${DIFF:-500}" -per 100
