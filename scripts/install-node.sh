#!/usr/bin/env bash
# Installs what a real test node needs (testenv.StartNode): containerd, runc
# and the CNI plugins from Debian's packages (they need root anyway), and the
# kubelet built from the Kubernetes module (scripts/install-tools.sh kubelet).
# Without them the tests that need a real node skip and say why.
#
#   scripts/install-node.sh      (as root; .ci/run calls it)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
  echo "install-node: not root: containerd and runc are not installed; the real-node tests will skip" >&2
else
  missing=()
  for pkg in containerd runc containernetworking-plugins; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "install-node: apt-get install ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    # Without them the real-node tests skip and say what is missing: a
    # package source that cannot be reached fails nothing else.
    if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >&2; then
      echo "install-node: apt-get failed: the real-node tests will skip" >&2
    fi
  fi
fi
scripts/install-tools.sh kubelet
