#!/usr/bin/env bash
# Records what the real Flux helm-controller writes in the scenarios of
# internal/testkit/helmdriver (TestConformance -record) into
# internal/testkit/helmdriver/testdata/helm-controller.
#
#   scripts/record-helm-controller.sh HELM_CONTROLLER_SOURCE
#
# HELM_CONTROLLER_SOURCE is a checkout of github.com/fluxcd/helm-controller at
# the tag to record (git checkout v1.6.3). Its module and its Helm fork
# (github.com/fluxcd/helm/v4) are not served by the Go module proxy, so CI
# cannot build it: this runs on a machine that can read the repository. The
# fork is replaced by the Helm release it forks (HELM, default v4.2.4), in a
# copy of the checkout. Needs the tools of scripts/install-tools.sh
# (kube-apiserver, kwok, source-controller, registry, helm).
set -euo pipefail

src=${1:?usage: $0 HELM_CONTROLLER_SOURCE}
HELM=${HELM:-v4.2.4}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

tag=$(git -C "$src" describe --tags --exact-match 2>/dev/null || git -C "$src" rev-parse --short HEAD)
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"
echo "building helm-controller $tag with helm.sh/helm/v4 $HELM" >&2
(cd "$work/src" && go mod edit -replace "helm.sh/helm/v4=helm.sh/helm/v4@$HELM" &&
  GOFLAGS=-mod=mod go mod tidy >&2 && GOFLAGS=-mod=mod go build -o "$work/helm-controller" .)

export PATH="${SOLAR_TOOLS:-$HOME/.cache/solar/tools}/bin:$PATH"
cd "$root"
SOLAR_HELM_CONTROLLER="$work/helm-controller" \
  SOLAR_HELM_CONTROLLER_VERSION="$tag (built with $(go env GOVERSION) and helm.sh/helm/v4 $HELM in place of its fork github.com/fluxcd/helm/v4, which the module proxy does not serve)" \
  go test ./internal/testkit/helmdriver -run TestConformance -count=1 -timeout 30m -record
git diff --stat -- internal/testkit/helmdriver/testdata/helm-controller >&2
