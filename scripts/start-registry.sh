#!/usr/bin/env bash
# start-registry.sh: runs a real OCI registry (the CNCF Distribution registry
# v3, `registry`, which scripts/install-tools.sh builds) on 127.0.0.1 with
# htpasswd basic auth and, with --tls, a self-signed certificate for IP
# 127.0.0.1, both made by solar-testpki (no openssl, no htpasswd, no root).
# The test helper (internal/testkit/testenv) starts it; it also works by hand, with
# the tools' bin directory on PATH:
#
#   REGISTRY_USER=solar REGISTRY_PASSWORD=secret scripts/start-registry.sh DIR PORT [--tls] [--no-cache]
#
# DIR holds the storage, the htpasswd file, the config and, with --tls,
# cert.pem (also the CA to trust) and key.pem. --no-cache leaves out the
# in-memory cache of blob descriptors, so that a blob's HEAD answers from the
# storage itself (a test damages the storage and reads what a HEAD then
# says). The registry runs in the
# foreground (exec) until killed. REGISTRY_AUTH=none serves without auth
# (scripts/bench measures the registry's cost of bcrypt basic auth with it).
# REGISTRY_BIN runs another registry binary of the same lineage with the same
# config (scripts/bench compares Debian's docker-registry 2.8 with it).
set -euo pipefail
# The tools it runs: built by scripts/install-tools.sh the first time (only
# those), found on PATH or in its cache after that.
need="registry solar-testpki"
for tool in $need; do
  command -v "$tool" >/dev/null || { PATH=$("$(dirname "$0")/install-tools.sh" $need):$PATH; break; }
done
usage="usage: start-registry.sh DIR PORT [--tls] [--no-cache]"
dir=${1:?$usage}
port=${2:?$usage}
tls="" cache="  # As the registry's docs recommend: blob descriptors cached in memory.
  cache:
    blobdescriptor: inmemory"
for arg in "${@:3}"; do
  case $arg in
  --tls) tls=--tls ;;
  --no-cache) cache="" ;;
  *) echo "$usage" >&2; exit 2 ;;
  esac
done
: "${REGISTRY_USER:?set REGISTRY_USER}" "${REGISTRY_PASSWORD:?set REGISTRY_PASSWORD}"
mkdir -p "$dir/data"

# bcrypt, as the registry requires, at htpasswd -B's cost (5).
printf '%s' "$REGISTRY_PASSWORD" | solar-testpki htpasswd "$REGISTRY_USER" >"$dir/htpasswd"

tls_config=""
if [ "$tls" = "--tls" ]; then
  solar-testpki cert "$dir"
  tls_config="  tls:
    certificate: $dir/cert.pem
    key: $dir/key.pem"
fi

auth_config="auth:
  htpasswd:
    realm: solar
    path: $dir/htpasswd"
if [ "${REGISTRY_AUTH:-htpasswd}" = none ]; then
  auth_config=""
fi

cat >"$dir/config.yml" <<CONFIG
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $dir/data
$cache
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
  secret: solar-test-$port
$tls_config
$auth_config
CONFIG

# v3 traces every request with OpenTelemetry and exports the traces to
# localhost:4318 unless told not to (its configuration docs: "Disable traces
# export"); there is nothing to receive them here.
export OTEL_TRACES_EXPORTER=${OTEL_TRACES_EXPORTER:-none}
# The registry reads REGISTRY_* variables as overrides of its config
# (REGISTRY_AUTH=none would set auth to "none"): this script's own go.
bin=${REGISTRY_BIN:-registry}
unset REGISTRY_USER REGISTRY_PASSWORD REGISTRY_AUTH REGISTRY_BIN
exec "$bin" serve "$dir/config.yml"
