#!/usr/bin/env bash
# start-nats.sh: runs a real NATS server with JetStream on 127.0.0.1 (nats-server,
# built by scripts/install-tools.sh), alone or as one node of a cluster. The
# test helper (internal/testenv) starts it; by hand:
#
#   scripts/start-nats.sh DIR PORT                                # one server
#   scripts/start-nats.sh DIR PORT NAME CLUSTER_PORT ROUTE...     # a cluster node
#
# e.g. a 3-node cluster, each node in its own shell:
#   scripts/start-nats.sh /tmp/n1 4222 n1 6222 nats://127.0.0.1:6223 nats://127.0.0.1:6224
#
# DIR holds JetStream's storage; running it again on the same DIR restarts the
# node on its data. It runs until killed.
set -euo pipefail
dir=${1:?usage: start-nats.sh DIR PORT [NAME CLUSTER_PORT ROUTE...]}
port=${2:?usage: start-nats.sh DIR PORT [NAME CLUSTER_PORT ROUTE...]}
args=(-a 127.0.0.1 -p "$port" -js -sd "$dir")
if [ $# -ge 4 ]; then
  name=$3 cluster_port=$4
  shift 4
  routes=$(IFS=,; echo "$*")
  args+=(-n "$name" --cluster_name solar --cluster "nats://127.0.0.1:$cluster_port" --routes "$routes")
fi
mkdir -p "$dir"
exec nats-server "${args[@]}"
