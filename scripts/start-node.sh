#!/usr/bin/env bash
# start-node.sh: one real Kubernetes node where containers run: containerd
# and runc (Debian's packages: apt-get install containerd runc
# containernetworking-plugins; root needed) and a kubelet 1.36 built from the
# Kubernetes module (scripts/install-tools.sh kubelet; not in its default set).
# Each part runs in the foreground (exec) until killed, so start both, the
# runtime first; the test helper (internal/testkit/testenv StartNode) does:
#
#   scripts/start-node.sh containerd DIR REGISTRY_HOST PAUSE_IMAGE [SOURCE_HOST=MIRROR_URL]...
#   scripts/start-node.sh kubelet DIR KUBECONFIG NODE_NAME PORT HEALTHZ_PORT
#
# DIR holds everything either writes: containerd's root, state and socket
# (DIR/containerd.sock), the CNI configuration and IPAM state, the kubelet's
# root dir and config; nothing goes to the system's /var/lib. REGISTRY_HOST
# (127.0.0.1:PORT) is pulled from over plain HTTP; PAUSE_IMAGE is the pods'
# sandbox image (containerd's default one is not reachable offline).
#
# Each SOURCE_HOST=MIRROR_URL makes containerd pull SOURCE_HOST's images from
# MIRROR_URL first, a registry's API root for that host's repositories, e.g.
# https://site.example:5000/v2/mirror/ghcr.io for a site that holds
# ghcr.io/a/b as mirror/ghcr.io/a/b; SOURCE_HOST itself is asked only when the
# mirror fails. MIRROR_CA (a file) is the mirrors' CA, MIRROR_AUTH_FILE a
# file holding their user:password (one site: the same for every mirror).
#
# The kubelet is set for these machines: cgroup driver cgroupfs (PID 1 is not
# systemd), cgroup v1 accepted (failCgroupV1: false; 1.35 and later refuse v1
# by default), swap tolerated, its API anonymous (AlwaysAllow) on the
# machine's own address only; it registers NODE_NAME
# with the admin KUBECONFIG.
set -euo pipefail
usage="usage: start-node.sh containerd DIR REGISTRY_HOST PAUSE_IMAGE [SOURCE_HOST=MIRROR_URL]... | kubelet DIR KUBECONFIG NODE_NAME PORT HEALTHZ_PORT"
part=${1:?$usage}
dir=${2:?$usage}
dir=$(realpath -m "$dir")
mkdir -p "$dir"

case $part in
containerd)
  registry=${3:?$usage}
  pause=${4:?$usage}
  mkdir -p "$dir/cni"
  # One hosts.toml per registry host under config_path (containerd's
  # docs/hosts.md, "Registry Host Namespace": certs.d/HOST[:PORT]/hosts.toml;
  # containerd 1.6 reads the HOST:PORT directory as is).
  # 0600: a mirror's hosts.toml holds its credentials.
  hosts() { mkdir -p "$dir/certs.d/$1" && (umask 077 && cat >"$dir/certs.d/$1/hosts.toml"); }
  mirrored=" "
  for arg in "${@:5}"; do
    source=${arg%%=*} url=${arg#*=}
    [ "$source" != "$arg" ] && [ -n "$source" ] && [ -n "$url" ] || { echo "$usage" >&2; exit 2; }
    mirrored+="$source "
    # docs/hosts.md: the [host] entries are tried in order, then server
    # ("If server is not specified then the image's registry host namespace
    # will automatically be used"); override_path: "the host's API root
    # endpoint is defined in the URL path" (no /v2 added, the path kept);
    # capabilities pull and resolve: a private mirror, trusted to resolve
    # tags; ca: paths absolute or relative to hosts.toml; [header]: sent with
    # every request to that host (basic auth, as the registry's htpasswd
    # checks it, with no token exchange).
    server=""
    if [ "$source" = "$registry" ]; then server="server = \"http://$registry\""; fi
    {
      echo "$server"
      echo "[host.\"$url\"]"
      echo '  capabilities = ["pull", "resolve"]'
      echo '  override_path = true'
      if [ -n "${MIRROR_CA:-}" ]; then echo "  ca = \"$MIRROR_CA\""; fi
      if [ -n "${MIRROR_AUTH_FILE:-}" ]; then
        echo "  [host.\"$url\".header]"
        echo "    Authorization = \"Basic $(base64 -w0 <"$MIRROR_AUTH_FILE")\""
      fi
    } | hosts "$source"
  done
  case $mirrored in
  *" $registry "*) ;;
  *) hosts "$registry" <<TOML ;;
server = "http://$registry"
[host."http://$registry"]
  capabilities = ["pull", "resolve"]
TOML
  esac
  # One bridge for the node's pods, its IPAM state under DIR.
  cat >"$dir/cni/10-solar.conflist" <<JSON
{"cniVersion": "0.4.0", "name": "solar", "plugins": [
  {"type": "bridge", "bridge": "solar0", "isGateway": true, "ipMasq": true,
   "ipam": {"type": "host-local", "dataDir": "$dir/ipam",
            "ranges": [[{"subnet": "10.244.0.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}},
  {"type": "loopback"}]}
JSON
  cat >"$dir/containerd.toml" <<TOML
version = 2
root = "$dir/containerd/root"
state = "$dir/containerd/state"
[grpc]
  address = "$dir/containerd.sock"
[ttrpc]
  address = "$dir/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$pause"
  # The kubelet asks for oom_score_adj -998 for every pod's sandbox; lowering
  # it needs CAP_SYS_RESOURCE, which these machines' root lacks (runc:
  # "failed to update /proc/self/oom_score_adj: Permission denied"). Keep it
  # at containerd's own instead, as rootless setups do.
  restrict_oom_score_adj = true
  # Network namespaces under DIR too, so that removing DIR's mounts frees them.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$dir/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$dir/cni"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$dir/certs.d"
TOML
  exec containerd --config "$dir/containerd.toml"
  ;;
kubelet)
  kubeconfig=${3:?$usage}
  name=${4:?$usage}
  port=${5:?$usage}
  healthz=${6:?$usage}
  # The kubelet refuses a loopback node IP ("nodeIP can't be loopback
  # address"), and the API server reaches it there for logs: the address of
  # the default route, which the kubelet alone listens on.
  ip=$(ip -4 route get 1.1.1.1 | sed -n 's/.* src \([0-9.]*\).*/\1/p')
  : "${ip:?no IPv4 address with a default route for the node}"
  cat >"$dir/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$dir/containerd.sock
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
address: $ip
port: $port
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $healthz
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
# The machine's own resolv.conf may name resolvers a pod cannot reach.
resolvConf: ""
podLogsDir: $dir/pod-logs
# Test machines run with little free disk: no evictions for it.
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
serializeImagePulls: false
YAML
  exec kubelet --config "$dir/kubelet.yaml" --kubeconfig "$kubeconfig" \
    --root-dir "$dir/kubelet" --cert-dir "$dir/kubelet/pki" \
    --hostname-override "$name" --node-ip "$ip" --v 1
  ;;
*)
  echo "$usage" >&2
  exit 2
  ;;
esac
