#!/usr/bin/env bash
# bench-fleet.sh: solar fleet apply against a real registry and NATS, beside
# what users would run instead (oras push of each attempt and nats kv put of
# each device's key, the NATS CLI, no compare-and-set), in one run:
#
#   scripts/bench-fleet.sh [DEVICES]     # default 1000
#
# It builds bin/solar, installs the NATS CLI (natscli v0.5.0, go install) into
# the tools cache when missing, starts the Distribution registry (no auth)
# and nats-server on random ports in a temporary folder, and prints a table.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}
bin=$(scripts/install-tools.sh)
export PATH="$bin:$PATH"
tools=$(dirname "$bin")
if [ ! -x "$tools/natscli-v0.5.0/nats" ]; then
  GOBIN="$tools/natscli-v0.5.0" go install github.com/nats-io/natscli/nats@v0.5.0
fi
natscli="$tools/natscli-v0.5.0/nats"
go build -o bin/ ./cmd/solar
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
port() { echo $((20000 + RANDOM % 20000)); }
reg=127.0.0.1:$(port)
nport=$(port)
REGISTRY_USER=bench REGISTRY_PASSWORD=bench REGISTRY_AUTH=none scripts/start-registry.sh "$work/reg" "${reg#*:}" >"$work/reg.log" 2>&1 &
scripts/start-nats.sh "$work/nats" "$nport" >"$work/nats.log" 2>&1 &
nats=nats://127.0.0.1:$nport
for _ in $(seq 100); do
  (</dev/tcp/127.0.0.1/"${reg#*:}") 2>/dev/null && "$natscli" --server "$nats" account info >/dev/null 2>&1 && break
  sleep 0.1
done

# The agent: two small binaries; the tree: n Devices and one DeviceUpgrade.
head -c 4096 /dev/urandom >"$work/agent-amd64"
head -c 4096 /dev/urandom >"$work/agent-arm64"
bin/solar fleet push-agent --registry "$reg" --plain-http --repository fleet/agent --version 1.4.0 \
  "$work/agent-amd64=linux/amd64" "$work/agent-arm64=linux/arm64" >/dev/null
mkdir -p "$work/tree" "$work/base"
awk -v n="$n" 'BEGIN {
  for (i = 0; i < n; i++) {
    arch = (i % 2) ? "arm64" : "amd64"
    printf "---\napiVersion: solar.opendefense.cloud/v1alpha1\nkind: Device\nmetadata: {name: dev-%05d, namespace: fleet, labels: {ring: all}}\nspec: {deviceId: dev-%05d, platform: linux/%s}\n", i, i, arch
  }
  printf "---\napiVersion: solar.opendefense.cloud/v1alpha1\nkind: DeviceUpgrade\nmetadata: {name: all, namespace: fleet}\nspec:\n  agentVersion: 1.4.0\n  artifact: fleet/agent:1.4.0\n  deviceSelector: {matchLabels: {ring: all}}\n"
}' >"$work/tree/devices.yaml"

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
apply() {
  local start
  start=$(now)
  bin/solar fleet apply "$work/tree" --cache-dir "" --registry "$reg" --plain-http --nats "$nats" >"$work/out" 2>&1
  since "$start"
}
cold=$(apply)
noop=$(apply)

# What users run instead, per device: oras push of the attempt, nats kv put.
start=$(now)
for i in $(seq 0 $((n - 1))); do
  id=$(printf 'dev-%05d' "$i")
  printf '{"deviceId":"%s","targetVersion":"1.4.0"}' "$id" >"$work/base/$id.json"
  (cd "$work/base" && oras push --plain-http "$reg/fleet/agent/baseline:$id" --artifact-type application/vnd.solar.fleet.attempt.v1 \
    "$id.json:application/vnd.solar.fleet.attempt.v1+json" >/dev/null)
  "$natscli" --server "$nats" kv put solar-fleet "baseline.$id" "$(cat "$work/base/$id.json")" >/dev/null
done
base=$(since "$start")

awk -v n="$n" -v cold="$cold" -v noop="$noop" -v base="$base" 'BEGIN {
  printf "| run (%d devices) | wall | per device |\n|---|---|---|\n", n
  printf "| solar fleet apply, cold | %.1f s | %.1f ms |\n", cold, cold * 1000 / n
  printf "| solar fleet apply, no-op | %.2f s | %.2f ms |\n", noop, noop * 1000 / n
  printf "| oras push + nats kv put, per device | %.1f s | %.1f ms |\n", base, base * 1000 / n
  printf "\nsolar cold is %.1fx faster per device than the loop\n", base / cold
}'
