#!/usr/bin/env bash
# install-tools.sh: builds, with pinned versions, every CLI and service the tests use
# into a cache outside the repository, and reuses what is already there.
#
#   scripts/install-tools.sh          install everything missing, print the bin directory
#   SOLAR_TOOLS=/some/dir scripts/... use another cache (default ~/.cache/solar/tools)
#
# Every tool lives in $SOLAR_TOOLS/<name>-<version>/ and is linked into $SOLAR_TOOLS/bin,
# so a version bump builds the new one beside the old and switching back is free.
set -euo pipefail

TOOLS="${SOLAR_TOOLS:-$HOME/.cache/solar/tools}"
BIN="$TOOLS/bin"
mkdir -p "$BIN"

log() { printf 'install-tools: %s\n' "$*" >&2; }

# go_tool NAME MODULE/PATH VERSION: go install PATH@VERSION into its own versioned directory.
go_tool() {
  local name=$1 pkg=$2 version=$3
  local dir="$TOOLS/$name-$version"
  if [ ! -x "$dir/$name" ]; then
    log "building $name $version (go install $pkg@$version)"
    rm -rf "$dir.tmp"
    mkdir -p "$dir.tmp"
    GOBIN="$dir.tmp" GOFLAGS=-buildvcs=false go install "$pkg@$version"
    rm -rf "$dir"
    mv "$dir.tmp" "$dir"
  fi
  ln -sfn "$dir/$name" "$BIN/$name"
}

go_tool cue cuelang.org/go/cmd/cue v0.17.1
go_tool helm helm.sh/helm/v3/cmd/helm v3.22.0

echo "$BIN"
