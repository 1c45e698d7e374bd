#!/usr/bin/env bash
# publish-namespace.sh: the CI job of one namespace. Run one job per namespace
# (a matrix); the registry is the only state the jobs share, and two jobs on the
# same namespace at once lose nothing (see solar publish --help).
#
#   NAMESPACE=alpha REGISTRY=registry.example.com/solar SOLAR_KUBECONFIG=solar.yaml \
#   REGISTRY_USER=ci REGISTRY_PASSWORD=... examples/ci/publish-namespace.sh
#
# SOLAR_KUBECONFIG is the SolAr API server where the agent credentials live:
# without it, a Target whose agent Release needs a credential fails and keeps
# its previous bootstrap chart (its agent is never left without a token).
#
# Exit code 0: published (or nothing to do); 1: invalid input, a Target that
# does not resolve, or a registry failure. The plan goes to plan-$NAMESPACE.json.
set -euo pipefail
: "${NAMESPACE:?}" "${REGISTRY:?}" "${REGISTRY_USER:?}" "${REGISTRY_PASSWORD:?}" "${SOLAR_KUBECONFIG:?}"
INPUT=${INPUT:-examples/}

# What would change, for the job log; the password never appears in it.
printf '%s\n' "$REGISTRY_PASSWORD" | solar publish -n "$NAMESPACE" "$INPUT" --registry "$REGISTRY" \
  --username "$REGISTRY_USER" --password-stdin ${CA_FILE:+--ca-file "$CA_FILE"} --kubeconfig "$SOLAR_KUBECONFIG" --dry-run

printf '%s\n' "$REGISTRY_PASSWORD" | solar publish -n "$NAMESPACE" "$INPUT" --registry "$REGISTRY" \
  --username "$REGISTRY_USER" --password-stdin ${CA_FILE:+--ca-file "$CA_FILE"} --kubeconfig "$SOLAR_KUBECONFIG" -o json >"plan-$NAMESPACE.json"
