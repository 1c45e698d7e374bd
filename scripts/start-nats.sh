#!/usr/bin/env bash
# start-nats.sh: runs a real NATS server with JetStream on 127.0.0.1 (nats-server,
# built by scripts/install-tools.sh), alone or as one node of a cluster. The
# test helper (internal/testkit/testenv) starts it; by hand:
#
#   scripts/start-nats.sh DIR PORT                                # one server
#   scripts/start-nats.sh DIR PORT NAME CLUSTER_PORT ROUTE...     # a cluster node
#
# e.g. a 3-node cluster, each node in its own shell:
#   scripts/start-nats.sh /tmp/n1 4222 n1 6222 nats://127.0.0.1:6223 nats://127.0.0.1:6224
#
# DIR holds JetStream's storage; running it again on the same DIR restarts the
# node on its data. It runs until killed. NATS_CLUSTER names a node's cluster
# (default solar): nodes route only to nodes of the same name. With NATS_USER and NATS_PASSWORD set,
# clients must log in as that user (the password goes into DIR/auth.conf, 0600,
# never onto the command line); with NATS_TLS=1, the server requires TLS with a
# self-signed certificate for IP 127.0.0.1, DIR/cert.pem (also the CA to trust).
#
# With NATS_CALLOUT_ISSUER (and NATS_USER, NATS_PASSWORD, NATS_CALLOUT_PASSWORD),
# devices log in through the fleet's auth callout (solar-auth-callout, docs/fleet.md):
# account FLEET holds JetStream and the service user NATS_USER; account AUTH holds
# the callout's user auth-callout (password NATS_CALLOUT_PASSWORD); every other
# connection is sent to the callout, whose account key is NATS_CALLOUT_ISSUER
# (and curve key NATS_CALLOUT_XKEY, if set: requests are then encrypted).
set -euo pipefail
# The tools it runs: built by scripts/install-tools.sh the first time (only
# those), found on PATH or in its cache after that.
need="nats-server"
for tool in $need; do
  command -v "$tool" >/dev/null || { PATH=$("$(dirname "$0")/install-tools.sh" $need):$PATH; break; }
done
dir=${1:?usage: start-nats.sh DIR PORT [NAME CLUSTER_PORT ROUTE...]}
port=${2:?usage: start-nats.sh DIR PORT [NAME CLUSTER_PORT ROUTE...]}
args=(-a 127.0.0.1 -p "$port" -js -sd "$dir")
if [ $# -ge 4 ]; then
  name=$3 cluster_port=$4
  shift 4
  routes=$(IFS=,; echo "$*")
  args+=(-n "$name" --cluster_name "${NATS_CLUSTER:-solar}" --cluster "nats://127.0.0.1:$cluster_port" --routes "$routes")
fi
mkdir -p "$dir"
conf=""
if [ -n "${NATS_CALLOUT_ISSUER:-}" ]; then
  : "${NATS_USER:?set NATS_USER with NATS_CALLOUT_ISSUER}" "${NATS_PASSWORD:?set NATS_PASSWORD}" "${NATS_CALLOUT_PASSWORD:?set NATS_CALLOUT_PASSWORD}"
  conf+="accounts {
  AUTH { users: [ { user: \"auth-callout\", password: \"$NATS_CALLOUT_PASSWORD\" } ] }
  FLEET { jetstream: enabled, users: [ { user: \"$NATS_USER\", password: \"$NATS_PASSWORD\" } ] }
}
authorization { auth_callout {
  issuer: \"$NATS_CALLOUT_ISSUER\"
  account: AUTH
  auth_users: [ \"auth-callout\", \"$NATS_USER\" ]
  ${NATS_CALLOUT_XKEY:+xkey: \"$NATS_CALLOUT_XKEY\"}
} }"$'\n'
elif [ -n "${NATS_USER:-}" ]; then
  conf+="authorization { user: \"$NATS_USER\", password: \"${NATS_PASSWORD:?set NATS_PASSWORD with NATS_USER}\" }"$'\n'
fi
if [ "${NATS_TLS:-}" = 1 ]; then
  if [ ! -f "$dir/cert.pem" ]; then
    solar-testpki cert "$dir" # scripts/install-tools.sh builds it: no openssl needed
  fi
  conf+="tls { cert_file: \"$dir/cert.pem\", key_file: \"$dir/key.pem\" }"$'\n'
fi
if [ -n "$conf" ]; then
  (umask 077 && printf '%s' "$conf" >"$dir/auth.conf")
  args+=(-c "$dir/auth.conf")
fi
exec nats-server "${args[@]}"
