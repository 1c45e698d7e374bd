#!/usr/bin/env bash
# start-registry.sh: runs a real OCI registry (Debian's docker-registry, the
# distribution project's) on 127.0.0.1 with htpasswd basic auth and, with
# --tls, a self-signed certificate for IP 127.0.0.1. The test helper
# (internal/testenv) starts it; it also works by hand:
#
#   REGISTRY_USER=solar REGISTRY_PASSWORD=secret scripts/start-registry.sh DIR PORT [--tls]
#
# DIR holds the storage, the htpasswd file, the config and, with --tls,
# cert.pem (also the CA to trust) and key.pem. The registry runs in the
# foreground (exec) until killed. REGISTRY_AUTH=none serves without auth
# (scripts/bench measures the registry's cost of bcrypt basic auth with it).
set -euo pipefail
dir=${1:?usage: start-registry.sh DIR PORT [--tls]}
port=${2:?usage: start-registry.sh DIR PORT [--tls]}
tls=${3:-}
: "${REGISTRY_USER:?set REGISTRY_USER}" "${REGISTRY_PASSWORD:?set REGISTRY_PASSWORD}"
mkdir -p "$dir/data"

# bcrypt (-B), as the registry requires.
htpasswd -Bbn "$REGISTRY_USER" "$REGISTRY_PASSWORD" >"$dir/htpasswd" 2>/dev/null

tls_config=""
if [ "$tls" = "--tls" ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
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
  # As the registry's docs recommend: blob descriptors cached in memory.
  cache:
    blobdescriptor: inmemory
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
  secret: solar-test-$port
$tls_config
$auth_config
CONFIG

exec docker-registry serve "$dir/config.yml"
