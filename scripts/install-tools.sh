#!/usr/bin/env bash
# install-tools.sh: builds, with pinned versions, every CLI and service the tests use
# into a cache outside the repository, and reuses what is already there.
#
#   scripts/install-tools.sh          install everything missing, print the bin directory
#   scripts/install-tools.sh NAME...  only those tools (and what they need), e.g.
#                                     `registry nats-server` for the README's quick start
#   scripts/install-tools.sh kubelet  the kubelet of a real node (scripts/start-node.sh),
#                                     built only when named: it needs root, containerd and runc
#   SOLAR_TOOLS=/some/dir scripts/... use another cache (default ~/.cache/solar/tools)
#
# Every tool lives in $SOLAR_TOOLS/<name>-<version>/ and is linked into $SOLAR_TOOLS/bin,
# so a version bump builds the new one beside the old and switching back is free.
set -euo pipefail

TOOLS="${SOLAR_TOOLS:-$HOME/.cache/solar/tools}"
BIN="$TOOLS/bin"
mkdir -p "$BIN"

log() { printf 'install-tools: %s\n' "$*" >&2; }

# The names this script installs; with arguments, only those are built.
KNOWN="registry solar-testpki nats-server nats cosign etcd kube-apiserver kube-controller-manager
kube-scheduler kubectl kwok source-controller flux-crd controller-gen cue helm oras"
# Built only when named (not by `make tools`, not in CI's default set).
NAMED_ONLY="kubelet"
ONLY=" $* "
# What a tool needs: the registry's htpasswd and certificate (solar-testpki);
# the Flux CRDs, source-controller's module and controller-gen.
[[ "$ONLY" == *" registry "* ]] && ONLY+="solar-testpki "
[[ "$ONLY" == *" flux-crd "* ]] && ONLY+="source-controller controller-gen "
for n in "$@"; do
  case " $(echo $KNOWN $NAMED_ONLY) " in *" $n "*) ;; *)
    log "unknown tool $n; the names are: $(echo $KNOWN $NAMED_ONLY)"
    exit 2 ;;
  esac
done
# want NAME...: whether any of the names is wanted (every one of KNOWN without
# arguments; those of NAMED_ONLY only when named).
want() {
  local n
  for n in "$@"; do
    [[ "$ONLY" == *" $n "* ]] && return 0
    [ "$ONLY" = "  " ] && [[ " $NAMED_ONLY " != *" $n "* ]] && return 0
  done
  return 1
}

# go_tool NAME MODULE/PATH VERSION: go install PATH@VERSION into its own versioned directory.
go_tool() {
  local name=$1 pkg=$2 version=$3
  local dir="$TOOLS/$name-$version"
  want "$name" || return 0
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

# The OCI registry of the publish tests: the CNCF Distribution registry, built
# like every other tool (no apt, no root); its htpasswd file and TLS
# certificate are made in Go by solar-testpki (see scripts/start-registry.sh).
go_tool registry github.com/distribution/distribution/v3/cmd/registry v3.1.2
if want solar-testpki; then
  mkdir -p "$TOOLS/solar-testpki"
  (cd "$(dirname "$0")/.." && GOFLAGS=-buildvcs=false go build -o "$TOOLS/solar-testpki/solar-testpki" ./scripts/testpki)
  ln -sfn "$TOOLS/solar-testpki/solar-testpki" "$BIN/solar-testpki"
fi

# wrapped_tool NAME VERSION PKG LDFLAGS: go build PKG inside a throwaway wrapper
# module, for tools whose own go.mod cannot be used with go install (replace
# directives). The caller writes the wrapper's go.mod (and any stub) into $WRAP
# before calling; tools.go and go.sum are made here.
wrapped_tool() {
  local name=$1 version=$2 pkg=$3 ldflags=${4:-}
  local dir="$TOOLS/$name-$version"
  want "$name" || return 0
  if [ ! -x "$dir/$name" ]; then
    log "building $name $version (wrapper module around $pkg; slow the first time)"
    printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$pkg" >"$WRAP/tools.go"
    # -e: tests of dependencies may need modules the proxy no longer serves.
    (cd "$WRAP" && GOFLAGS=-mod=mod go mod tidy -e >&2 && \
      GOFLAGS=-buildvcs=false go build -ldflags "$ldflags" -o "$dir.tmp/$name" "$pkg" >&2)
    rm -rf "$dir"
    mv "$dir.tmp" "$dir"
  fi
  ln -sfn "$dir/$name" "$BIN/$name"
}

# NATS with JetStream for the fleet tests: see scripts/start-nats.sh.
go_tool nats-server github.com/nats-io/nats-server/v2 v2.15.2

# The NATS CLI: docs/fleet.md writes a device's state with it (nats kv put),
# as no device runs there. About 1.5 minutes on 2 cores the first time.
go_tool nats github.com/nats-io/natscli/nats v0.5.1

# cosign, to verify Solar's chart signatures as users do (cosign verify --key).
# About 1,500 packages: 5.5 minutes on 2 cores the first time, then cached.
go_tool cosign github.com/sigstore/cosign/v3/cmd/cosign v3.1.3

# etcd for the API server (Debian's 3.4 is too old).
ETCD=v3.6.16
if want etcd && [ ! -x "$TOOLS/etcd-$ETCD/etcd" ]; then
  WRAP=$(mktemp -d)
  printf 'module solar.local/etcd\n\ngo 1.26.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD" >"$WRAP/go.mod"
fi
wrapped_tool etcd "$ETCD" go.etcd.io/etcd/server/v3

# kube-apiserver, kube-controller-manager, kube-scheduler and kubectl (the docs'
# commands use it, docs/docs_test.go runs them): k8s.io/kubernetes
# with every staging module replaced by its release (k8s.io/sample-apiserver by
# an empty stub: nothing needs it). One wrapper module builds all four, and the
# kubelet when named.
KUBE=1.36.3
KUBE_TOOLS="kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet"
for c in $KUBE_TOOLS; do
  { ! want "$c" || [ -x "$TOOLS/$c-v$KUBE/$c" ]; } && continue
  WRAP=$(mktemp -d)
  mkdir -p "$WRAP/sample-apiserver"
  printf 'module k8s.io/sample-apiserver\n\ngo 1.26.0\n' >"$WRAP/sample-apiserver/go.mod"
  gomod=$(cd "$WRAP" && go mod download -json "k8s.io/kubernetes@v$KUBE" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  {
    printf 'module solar.local/kube\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n' "$KUBE"
    sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\1#p' "$gomod" | while read -r m; do
      if [ "$m" = k8s.io/sample-apiserver ]; then
        printf '\t%s => ./sample-apiserver\n' "$m"
      else
        printf '\t%s => %s v0.%s\n' "$m" "$m" "${KUBE#1.}"
      fi
    done
    printf ')\n'
  } >"$WRAP/go.mod"
  break
done
minor=${KUBE#1.}
minor=${minor%%.*}
kv=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kv="$kv -X $p.gitVersion=v$KUBE -X $p.gitMajor=1 -X $p.gitMinor=$minor"
done
for c in $KUBE_TOOLS; do
  wrapped_tool "$c" "v$KUBE" "k8s.io/kubernetes/cmd/$c" "$kv"
done

# kwok: fake nodes whose pods "run", so that Deployments become Available on
# the test cluster (kube-scheduler binds, kwok plays the kubelet).
KWOK=v0.8.0
go_tool kwok sigs.k8s.io/kwok/cmd/kwok "$KWOK"
# The kwok binary has no built-in Stages (without --config: "no stages
# found"): the default ones kwokctl gives its clusters (kustomize/stage:
# node/fast, node/heartbeat-with-lease, pod/fast) are taken from the module as
# they are, into stages.yaml beside the binary (internal/testkit/testenv reads it).
if want kwok && [ ! -s "$TOOLS/kwok-$KWOK/stages.yaml" ]; then
  src=$(cd "$(mktemp -d)" && go mod download -json "sigs.k8s.io/kwok@$KWOK" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  sep=""
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
    pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    printf '%s' "$sep"
    cat "$src/kustomize/stage/$f"
    sep=$'---\n'
  done >"$TOOLS/kwok-$KWOK/stages.yaml.tmp"
  mv "$TOOLS/kwok-$KWOK/stages.yaml.tmp" "$TOOLS/kwok-$KWOK/stages.yaml"
fi

# Flux source-controller (v1.10 needs Go 1.27), with its upstream go-digest
# replace; its CRDs are copied from the module into crd/ beside the binary.
SC=v1.9.6
if want source-controller && [ ! -x "$TOOLS/source-controller-$SC/source-controller" ]; then
  WRAP=$(mktemp -d)
  cat >"$WRAP/go.mod" <<GOMOD
module solar.local/source-controller

go 1.26.0

require github.com/fluxcd/source-controller $SC

replace github.com/opencontainers/go-digest => github.com/opencontainers/go-digest v1.0.1-0.20220411205349-bde1400a84be

replace github.com/fluxcd/pkg/artifact => github.com/fluxcd/pkg/artifact v0.18.0
GOMOD
  src=$(cd "$WRAP" && go mod download -json "github.com/fluxcd/source-controller@$SC" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  mkdir -p "$TOOLS/source-controller-$SC.tmp/crd"
  cp "$src"/config/crd/bases/*.yaml "$TOOLS/source-controller-$SC.tmp/crd/"
fi
wrapped_tool source-controller "$SC" github.com/fluxcd/source-controller

# The HelmRelease CRD: helm-controller's own module is not served, so the CRD is
# generated from its API module with controller-gen, as helm-controller's build
# does, into the same CRD directory (testenv installs every CRD there).
HC=v1.6.5
CG=v0.20.1
go_tool controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen "$CG"
HR_CRD="$TOOLS/source-controller-$SC/crd/helm.toolkit.fluxcd.io_helmreleases-$HC.yaml"
if want flux-crd && [ ! -s "$HR_CRD" ]; then
  log "generating the HelmRelease CRD of github.com/fluxcd/helm-controller/api $HC (controller-gen $CG)"
  WRAP=$(mktemp -d)
  src=$(cd "$WRAP" && go mod download -json "github.com/fluxcd/helm-controller/api@$HC" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  cp -r "$src" "$WRAP/api"
  chmod -R u+w "$WRAP/api"
  (cd "$WRAP/api" && GOFLAGS=-mod=mod go mod download >&2 && \
    "$TOOLS/controller-gen-$CG/controller-gen" crd paths=./v2/... output:crd:dir="$WRAP/crd" >&2)
  rm -f "$TOOLS/source-controller-$SC/crd/"helm.toolkit.fluxcd.io_helmreleases*.yaml
  cp "$WRAP/crd/helm.toolkit.fluxcd.io_helmreleases.yaml" "$HR_CRD"
  rm -rf "$WRAP"
fi
want flux-crd && ln -sfn "$TOOLS/source-controller-$SC/crd" "$TOOLS/flux-crd"

go_tool cue cuelang.org/go/cmd/cue v0.17.1
go_tool helm helm.sh/helm/v4/cmd/helm v4.3.2
# The oras CLI: the tests read solar's layouts by tag with it, as users would.
go_tool oras oras.land/oras/cmd/oras v1.3.6

echo "$BIN"
