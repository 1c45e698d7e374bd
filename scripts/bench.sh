#!/usr/bin/env bash
# bench.sh: solar vet against the baseline, plain `cue vet` with the same schemas,
# on the same synthetic tree of 10,000 objects, in the same run. Prints the
# wall-clock seconds of each (best of RUNS) and their ratio.
#   scripts/bench.sh            (make bench builds bin/solar and the tools first)
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
