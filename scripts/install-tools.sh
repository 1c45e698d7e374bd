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

# apt_tool COMMAND PACKAGE: install a Debian package when its command is missing.
apt_tool() {
  local cmd=$1 pkg=$2
  command -v "$cmd" >/dev/null && return
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  log "installing $pkg (apt-get install $pkg)"
  if [ -z "${APT_UPDATED:-}" ]; then
    $sudo apt-get update -qq >&2
    APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$pkg" >&2
}

# The OCI registry of the publish tests (Debian's build of distribution), its
# htpasswd tool and openssl for the TLS certificate: see scripts/start-registry.sh.
apt_tool docker-registry docker-registry
apt_tool htpasswd apache2-utils
apt_tool openssl openssl

go_tool cue cuelang.org/go/cmd/cue v0.17.1
go_tool helm helm.sh/helm/v3/cmd/helm v3.22.0

echo "$BIN"
