#!/usr/bin/env bash
# publish-namespace.sh: the CI job of one namespace. Run one job per namespace
# (a matrix); the registry is the only state the jobs share, and two jobs on the
# same namespace at once lose nothing (see solar publish --help).
#
#   NAMESPACE=alpha REGISTRY=registry.example.com/solar \
#   REGISTRY_USER=ci REGISTRY_PASSWORD=... examples/ci/publish-namespace.sh
#
# Exit code 0: published (or nothing to do); 1: invalid input, a Target that
# does not resolve, or a registry failure. The plan goes to plan-$NAMESPACE.json.
set -euo pipefail
: "${NAMESPACE:?}" "${REGISTRY:?}" "${REGISTRY_USER:?}" "${REGISTRY_PASSWORD:?}"
INPUT=${INPUT:-examples/}

# What would change, for the job log; the password never appears in it.
printf '%s\n' "$REGISTRY_PASSWORD" | solar publish -n "$NAMESPACE" "$INPUT" --registry "$REGISTRY" \
  --username "$REGISTRY_USER" --password-stdin ${CA_FILE:+--ca-file "$CA_FILE"} --dry-run

printf '%s\n' "$REGISTRY_PASSWORD" | solar publish -n "$NAMESPACE" "$INPUT" --registry "$REGISTRY" \
  --username "$REGISTRY_USER" --password-stdin ${CA_FILE:+--ca-file "$CA_FILE"} -o json >"plan-$NAMESPACE.json"
