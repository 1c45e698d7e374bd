#!/usr/bin/env bash
# start-apiserver.sh: runs a real Kubernetes API server (kube-apiserver 1.36 on
# etcd 3.6, both built by scripts/install-tools.sh) on 127.0.0.1 with RBAC, a
# service-account signing key pair (TokenRequest works) and a token file with
# one admin user. The test helper (internal/testkit/testenv) starts it; by hand:
#
#   scripts/start-apiserver.sh DIR ETCD_PORT API_PORT [ETCD_PEER_PORT]
#   KUBECONFIG=DIR/kubeconfig kubectl get ns     # once DIR/certs/apiserver.crt exists
#
# DIR gets etcd's data, the keys, the token file and kubeconfig (the admin,
# trusting the serving certificate the API server makes in DIR/certs). Both
# processes run until this script's process group is killed. Run again on the
# same DIR and ports, it restarts the API server on the same data, keys and
# certificate (the tests stop it in the middle of a credentials sync).
set -euo pipefail
# The tools it runs: built by scripts/install-tools.sh the first time (only
# those), found on PATH or in its cache after that.
need="etcd kube-apiserver"
for tool in $need; do
  command -v "$tool" >/dev/null || { PATH=$("$(dirname "$0")/install-tools.sh" $need):$PATH; break; }
done
dir=${1:?usage: start-apiserver.sh DIR ETCD_PORT API_PORT}
etcd_port=${2:?usage: start-apiserver.sh DIR ETCD_PORT API_PORT}
api_port=${3:?usage: start-apiserver.sh DIR ETCD_PORT API_PORT}
mkdir -p "$dir/etcd" "$dir/certs"

if [[ ! -s $dir/kubeconfig ]]; then
  # solar-testpki (scripts/install-tools.sh builds it): no openssl needed.
  solar-testpki rsa-key "$dir"
  token=$(solar-testpki token)
  printf '%s,solar-admin,solar-admin,"system:masters"\n' "$token" >"$dir/tokens.csv"
  cat >"$dir/kubeconfig.tmp" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: solar-test
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority: $dir/certs/apiserver.crt
users:
- name: solar-admin
  user:
    token: $token
contexts:
- name: solar-test
  context: {cluster: solar-test, user: solar-admin}
current-context: solar-test
KUBECONFIG
  mv "$dir/kubeconfig.tmp" "$dir/kubeconfig" # last: it marks the keys as made
fi

peer_port=${4:-$((etcd_port + 1))}
etcd --data-dir "$dir/etcd" --unsafe-no-fsync \
  --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
  --initial-cluster "default=http://127.0.0.1:$peer_port" --log-level warn &

exec kube-apiserver \
  --etcd-servers "http://127.0.0.1:$etcd_port" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
  --cert-dir "$dir/certs" \
  --authorization-mode RBAC \
  --token-auth-file "$dir/tokens.csv" \
  --service-account-issuer https://kubernetes.default.svc \
  --service-account-key-file "$dir/sa.pub" \
  --service-account-signing-key-file "$dir/sa.key" \
  --service-cluster-ip-range 10.96.0.0/24 \
  --kubelet-preferred-address-types InternalIP,ExternalIP,Hostname \
  --enable-priority-and-fairness=false \
  --v 0
