#!/usr/bin/env bash
# Installs the browser the UI tests drive (internal/testkit/browser):
# Debian's chromium package, run headless through chromedp. Idempotent: an
# installed chromium is left as it is. Without it the browser tests fail
# (they do not skip, unless -short) and say to run this script.
#
#   scripts/install-browser.sh      (as root; .ci/run calls it)
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install-browser: not root: run as root (it installs Debian's chromium with apt-get)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# apt-get -qq still lets dpkg talk: keep its output, show it on failure.
quiet() {
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    return 1
  fi
}
echo "install-browser: apt-get install chromium" >&2
# A mirror caught mid-sync fails an update now and then: try once more.
quiet apt-get update -qq || { sleep 5; quiet apt-get update -qq; }
# Without the recommends (no sandbox helper, desktop services or extra
# fonts): headless chromium needs none of them, and Debian's fontconfig
# already brings DejaVu for the screenshots' text.
quiet apt-get install -y -qq --no-install-recommends chromium
echo "install-browser: $(chromium --version 2>/dev/null)" >&2
