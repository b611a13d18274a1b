# shellcheck shell=bash
# The real worker node of tools/testenv/testenv (`up --real-node`): containerd + runc + CNI bridge,
# kubelet, kube-proxy (iptables) and CoreDNS, on a bridge of their own. Sourced by testenv; uses
# its DIR, BIN, HERE, log, die, start, alive, pid_alive, wait_for, kctl. See README.md, "A real node".

RN_NODE=coach-realnode                # the Node's name (and kubernetes.io/hostname)
RN_BRIDGE=coach0                      # the pods' bridge; the host's end holds RN_ADDR
RN_ADDR=10.88.0.1                     # bridge gateway: API server, kubelet, CoreDNS listen here only
RN_POD_CIDR=10.88.0.0/16              # pod addresses (host-local, from 10.88.0.10)
RN_SERVICE_CIDR=10.96.0.0/16          # the API server's --service-cluster-ip-range
RN_NETWORK=coach-realnode             # CNI network name
RN_LABEL=coach.dev/real-node          # label (value "true") and NoSchedule taint key
RN_PAUSE_IMAGE=coach.local/pause:3.10  # containerd's sandbox_image, imported, never pulled
RN_BUSYBOX_IMAGE=coach.local/busybox:1.35
RN_OWNER=/run/coach-testenv-realnode.owner   # names the DIR holding this machine's real node
RN_LOCK=/run/coach-testenv-realnode.lock
RN_GUARD=COACH-REALNODE-GUARD         # iptables chain (raw PREROUTING, mangle FORWARD)
# Host paths the kubelet, containerd and CNI use whatever they are told; down removes what appeared.
RN_HOST_PATHS=(/var/lib/kubelet /var/log/containers /var/log/pods /run/containerd /var/lib/cni)
# Host settings changed by the kubelet (kernel tunables), the bridge plugin (forwarding) and ours.
RN_SYSCTLS=(net.ipv4.ip_forward net.ipv6.conf.all.forwarding net.bridge.bridge-nf-call-iptables
  net.bridge.bridge-nf-call-ip6tables vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.conf.all.route_localnet)
RN_COMPONENTS=(coredns kube-proxy kubelet containerd)

rn_sock() { echo "$DIR/node/containerd/containerd.sock"; }
rn_ctr() { ctr --address "$(rn_sock)" -n k8s.io "$@"; }

# ---------------------------------------------------------------------------------------------
# preflight and the one-per-machine claim

rn_preflight() {
  [[ $(id -u) == 0 ]] || die "--real-node needs root (containerd, runc, iptables, cgroups)"
  local c missing=()
  for c in containerd containerd-shim-runc-v2 runc ctr iptables ip6tables ip mount umount gcc; do
    command -v "$c" >/dev/null || missing+=("$c")
  done
  for c in bridge host-local portmap loopback; do [[ -x /usr/lib/cni/$c ]] || missing+=("/usr/lib/cni/$c"); done
  [[ -x /bin/busybox ]] && /bin/busybox --list >/dev/null 2>&1 || missing+=(/bin/busybox)
  ((${#missing[@]} == 0)) || die "--real-node: missing ${missing[*]} (tools/bootstrap installs containerd runc containernetworking-plugins iptables busybox-static)"
  [[ -d /sys/fs/cgroup/memory && -d /sys/fs/cgroup/cpu ]] ||
    die "--real-node: needs cgroup v1 hierarchies under /sys/fs/cgroup (this setup is for cgroup v1)"
  [[ -d /proc/sys/net/bridge ]] || die "--real-node: no br_netfilter (/proc/sys/net/bridge)"
}

# Fails unless this process now owns the machine's real node (RN_OWNER names DIR).
rn_claim() {
  exec 8>"$RN_LOCK"
  flock -w 10 8 || die "--real-node: another 'up --real-node' holds $RN_LOCK"
  if [[ -s $RN_OWNER ]]; then
    local owner
    owner=$(cat "$RN_OWNER")
    exec 8>&-
    if [[ -f $owner/.coach-testenv ]]; then
      die "a real node is already up on this machine, in $owner (one per machine: it uses fixed host paths, cgroups and iptables chains); use it (KUBECONFIG=$owner/kubeconfig) or run: $0 down --dir $owner"
    fi
    die "$RN_OWNER names $owner, which no longer exists (a killed testenv?); clean up with: $0 real-node-clean"
  fi
  local left
  left=$(rn_leftovers)
  if [[ -n $left ]]; then
    exec 8>&-
    die "leftovers of an earlier real node on this machine:
$left
clean up with: $0 real-node-clean"
  fi
  echo "$DIR" >"$RN_OWNER"
  exec 8>&-
}

# ---------------------------------------------------------------------------------------------
# what a real node leaves on the host: printed one per line; nothing printed = clean

rn_iptables_chains() { # chains named KUBE-*, CNI-* or ours, in every table, IPv4 and IPv6
  local ipt t
  for ipt in iptables ip6tables; do
    for t in filter nat mangle raw; do
      "$ipt" -w 5 -t "$t" -S 2>/dev/null | awk -v p="$ipt/$t" \
        '$1 == "-N" && ($2 ~ /^KUBE-/ || $2 ~ /^CNI-/ || $2 ~ /^COACH-REALNODE/) {print p " chain " $2}'
    done
  done
  return 0
}

# Processes of a real node: the components and the shims by the files under DIR/node/ their command
# lines name, and everything in the kubepods cgroups (containers, pause).
rn_processes() {
  local p cmd re='/node/(containerd/config\.toml|containerd/containerd\.sock|kubelet\.yaml|kube-proxy\.yaml|Corefile)( |$)'
  for p in /proc/[0-9]*; do
    cmd=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
    [[ -n $cmd ]] || continue
    if ! [[ $cmd =~ $re ]]; then grep -q ':/kubepods' "$p/cgroup" 2>/dev/null || continue; fi
    echo "process ${p#/proc/}: ${cmd:0:160}"
  done
  return 0
}

# rn_leftovers [strict]: strict also counts files under the fixed host paths and CNI-* chains (what
# `down` removes; the suite checks them); without it (the check before up) only what a real node
# alone makes: the bridge, KUBE-* and guard chains, kubepods cgroups, mounts, processes.
rn_leftovers() {
  local p strict=${1:-}
  if [[ -e $RN_OWNER ]]; then echo "owner file $RN_OWNER ($(cat "$RN_OWNER" 2>/dev/null))"; fi
  if ip link show "$RN_BRIDGE" >/dev/null 2>&1; then echo "bridge $RN_BRIDGE"; fi
  ip -o link show type veth 2>/dev/null | awk -F': ' -v b="$RN_BRIDGE" '$0 ~ "master " b {print "veth " $2}'
  if [[ $strict == strict ]]; then rn_iptables_chains; else rn_iptables_chains | grep -v ' chain CNI-' || true; fi
  for p in /sys/fs/cgroup/*/kubepods; do if [[ -d $p ]]; then echo "cgroup $p"; fi; done
  awk '$2 ~ /^\/var\/lib\/kubelet|^\/run\/containerd|^\/run\/netns\/cni-|\/node\/(kubelet|containerd)\// {print "mount " $2}' /proc/self/mounts
  [[ $strict == strict ]] || { rn_processes; return 0; }
  for p in "${RN_HOST_PATHS[@]}"; do
    if [[ -d $p ]] && [[ -n $(ls -A "$p" 2>/dev/null) ]]; then
      # shellcheck disable=SC2012  # the first names, sorted, for a person to read
      echo "files under $p: $(ls -A "$p" | head -5 | tr '\n' ' ')"
    elif [[ -e $p && $p != /var/log/containers && $p != /var/log/pods ]]; then
      echo "path $p"
    fi
  done
  rn_processes
  return 0
}

# ---------------------------------------------------------------------------------------------
# host network: the bridge and the guard

rn_save_host() {
  local s p
  mkdir -p "$DIR/node"
  for s in "${RN_SYSCTLS[@]}"; do
    if sysctl -n "$s" >/dev/null 2>&1; then echo "$s=$(sysctl -n "$s")"; fi
  done >"$DIR/node/sysctl.before"
  for p in "${RN_HOST_PATHS[@]}"; do if [[ -e $p ]]; then echo "$p"; fi; done >"$DIR/node/paths.before"
}

rn_network_up() {
  ip link add "$RN_BRIDGE" type bridge
  ip addr add "$RN_ADDR/${RN_POD_CIDR#*/}" dev "$RN_BRIDGE"
  ip link set "$RN_BRIDGE" up
  # Pod-to-Service-to-pod traffic on one bridge needs the bridged packets to pass iptables.
  sysctl -qw net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1
  # The guard: nothing from outside reaches the bridge's addresses or the Service range (raw
  # PREROUTING, before kube-proxy's DNAT), and nothing is forwarded between the pods and any other
  # interface (mangle FORWARD, before filter's accept rules): pods reach the host and each other only.
  local guard_ipt=(iptables -w 5)
  "${guard_ipt[@]}" -t raw -N "$RN_GUARD"
  "${guard_ipt[@]}" -t raw -A "$RN_GUARD" -i lo -j RETURN
  "${guard_ipt[@]}" -t raw -A "$RN_GUARD" -i "$RN_BRIDGE" -j RETURN
  "${guard_ipt[@]}" -t raw -A "$RN_GUARD" -j DROP
  "${guard_ipt[@]}" -t raw -I PREROUTING 1 -d "$RN_POD_CIDR" -j "$RN_GUARD"
  "${guard_ipt[@]}" -t raw -I PREROUTING 1 -d "$RN_SERVICE_CIDR" -j "$RN_GUARD"
  "${guard_ipt[@]}" -t mangle -N "$RN_GUARD"
  "${guard_ipt[@]}" -t mangle -A "$RN_GUARD" -i "$RN_BRIDGE" -o "$RN_BRIDGE" -j RETURN
  "${guard_ipt[@]}" -t mangle -A "$RN_GUARD" -j DROP
  "${guard_ipt[@]}" -t mangle -I FORWARD 1 -i "$RN_BRIDGE" -j "$RN_GUARD"
  "${guard_ipt[@]}" -t mangle -I FORWARD 1 -o "$RN_BRIDGE" -j "$RN_GUARD"
}

# Removes every rule that jumps to a chain matching $3 (a regex) from the other chains of table
# $2, then flushes and deletes those chains. $1: iptables or ip6tables.
rn_iptables_purge() {
  local ipt=$1 t=$2 re=$3 rule chain
  "$ipt" -w 5 -t "$t" -S 2>/dev/null | awk -v re="$re" '$1 == "-A" && $2 !~ re && / -j / {
      for (i = 1; i <= NF; i++) if ($i == "-j" && $(i+1) ~ re) { print; break } }' |
    while IFS= read -r rule; do
      eval "set -- $rule" # the rule as iptables-save quotes it (comments hold spaces)
      shift
      "$ipt" -w 5 -t "$t" -D "$@" 2>/dev/null || true
    done
  for chain in $("$ipt" -w 5 -t "$t" -S 2>/dev/null | awk -v re="$re" '$1 == "-N" && $2 ~ re {print $2}'); do
    "$ipt" -w 5 -t "$t" -F "$chain" 2>/dev/null || true
  done
  for chain in $("$ipt" -w 5 -t "$t" -S 2>/dev/null | awk -v re="$re" '$1 == "-N" && $2 ~ re {print $2}'); do
    "$ipt" -w 5 -t "$t" -X "$chain" 2>/dev/null || true
  done
}

rn_network_down() {
  local ipt t v
  # Chains of kube-proxy and the kubelet (KUBE-*), of the CNI portmap/bridge plugins (CNI-*; no
  # other CNI user runs on this machine: one real node per machine) and the guard.
  for ipt in iptables ip6tables; do
    for t in nat filter mangle raw; do rn_iptables_purge "$ipt" "$t" '^(KUBE-|CNI-|COACH-REALNODE)'; done
  done
  for v in $(ip -o link show type veth 2>/dev/null | awk -F': ' -v b="$RN_BRIDGE" '$0 ~ "master " b {print $2}'); do
    ip link del "${v%@*}" 2>/dev/null || true
  done
  ip link del "$RN_BRIDGE" 2>/dev/null || true
}

# ---------------------------------------------------------------------------------------------
# certificates, kubeconfigs, configuration files

rn_pki() { # after make_pki: the node's client and serving certificates, kube-proxy, CoreDNS, kubelet client
  (
    cd "$DIR/pki" || exit
    umask 077
    key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$1" 2>/dev/null; }
    sign() {
      key "$1.key"
      openssl req -new -key "$1.key" -subj "$2" -out "$1.csr" 2>/dev/null
      printf '%s\n' "$3" >"$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -sha256 \
        -extfile "$1.ext" -out "$1.crt" 2>/dev/null
      rm -f "$1.csr" "$1.ext"
    }
    local client='keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth'
    sign kubelet-client "/O=system:nodes/CN=system:node:$RN_NODE" "$client"
    sign kubelet-serving "/CN=$RN_NODE" "keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:$RN_ADDR,DNS:$RN_NODE"
    sign kube-proxy "/CN=system:kube-proxy" "$client"
    sign coredns "/CN=coach:coredns" "$client"
    sign apiserver-kubelet-client "/CN=kube-apiserver-kubelet-client" "$client"
  )
}

# rn_kubeconfig FILE CERT_NAME: a kubeconfig for DIR/pki/CERT_NAME.{crt,key} against the API server.
rn_kubeconfig() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: coach-testenv
  cluster: {server: "https://$RN_ADDR:$RN_API_PORT", certificate-authority: "$DIR/pki/ca.crt"}
users:
- name: $2
  user: {client-certificate: "$DIR/pki/$2.crt", client-key: "$DIR/pki/$2.key"}
contexts:
- name: coach-testenv
  context: {cluster: coach-testenv, user: $2}
current-context: coach-testenv
EOF
  chmod 600 "$1"
}

rn_rbac() {
  kctl apply -f - >/dev/null <<'EOF'
# The API server's client certificate for kubelet calls (logs, exec, port-forward, metrics).
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "coach:kube-apiserver-kubelet-client"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:kubelet-api-admin"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: kube-apiserver-kubelet-client}]
---
# CoreDNS's kubernetes plugin (the rules of CoreDNS's own deployment manifest).
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "coach:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "coach:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "coach:coredns"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "coach:coredns"}]
EOF
}

rn_write_configs() {
  local n=$DIR/node
  mkdir -p "$n"/{containerd/root,containerd/state,containerd/runc,containerd/opt,cni/net.d,cni/networks,kubelet,pod-logs,images}
  cat >"$n/containerd/config.toml" <<EOF
version = 2
root = "$n/containerd/root"
state = "$n/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = "$n/containerd/containerd.sock"

[plugins."io.containerd.internal.v1.opt"]
  path = "$n/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$RN_PAUSE_IMAGE"
  # No CAP_SYS_RESOURCE here: runc cannot lower oom_score_adj below the shim's own.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$n/containerd/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$n/cni/net.d"
    max_conf_num = 1
EOF
  cat >"$n/cni/net.d/10-coach-realnode.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$RN_NETWORK",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$RN_BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$n/cni/networks",
        "ranges": [[{"subnet": "$RN_POD_CIDR", "rangeStart": "10.88.0.10", "gateway": "$RN_ADDR"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
EOF
  # Pods with dnsPolicy Default get this (no nameserver: nothing outside is reachable); ClusterFirst
  # pods get CoreDNS at $RN_ADDR and the cluster's search domains only.
  printf '# coach testenv real node: no upstream resolver\noptions ndots:5\n' >"$n/resolv.conf"
  cat >"$n/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $RN_ADDR
port: $RN_KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $RN_KUBELET_HEALTHZ_PORT
tlsCertFile: $DIR/pki/kubelet-serving.crt
tlsPrivateKeyFile: $DIR/pki/kubelet-serving.key
rotateCertificates: false
serverTLSBootstrap: false
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true, cacheTTL: 10s}
  x509: {clientCAFile: $DIR/pki/ca.crt}
authorization:
  mode: Webhook
  webhook: {cacheAuthorizedTTL: 10s, cacheUnauthorizedTTL: 5s}
containerRuntimeEndpoint: unix://$n/containerd/containerd.sock
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
makeIPTablesUtilChains: false
clusterDNS: [$RN_ADDR]
clusterDomain: cluster.local
resolvConf: $n/resolv.conf
podLogsDir: $n/pod-logs
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 50Mi, nodefs.available: 1%, nodefs.inodesFree: 1%, imagefs.available: 1%, imagefs.inodesFree: 1%}
evictionPressureTransitionPeriod: 10s
registerWithTaints:
- {key: $RN_LABEL, value: "true", effect: NoSchedule}
maxPods: 64
shutdownGracePeriod: 0s
nodeStatusUpdateFrequency: 5s
syncFrequency: 10s
fileCheckFrequency: 5s
staticPodPath: ""
EOF
  cat >"$n/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $n/kube-proxy.kubeconfig}
hostnameOverride: $RN_NODE
mode: iptables
clusterCIDR: $RN_POD_CIDR
nodePortAddresses: ["$RN_ADDR/32"]
healthzBindAddress: 127.0.0.1:$RN_PROXY_HEALTHZ_PORT
metricsBindAddress: 127.0.0.1:$RN_PROXY_METRICS_PORT
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s, udpTimeout: 0s, udpStreamTimeout: 0s}
iptables: {localhostNodePorts: false, masqueradeAll: false, syncPeriod: 30s, minSyncPeriod: 0s}
EOF
  printf '%s %s\n' "$RN_ADDR" "$RN_NODE" >"$n/hosts"
  cat >"$n/Corefile" <<EOF
.:53 {
    bind $RN_ADDR
    errors
    health 127.0.0.1:$RN_DNS_HEALTH_PORT
    ready 127.0.0.1:$RN_DNS_READY_PORT
    log . {
        class denial error
    }
    hosts $n/hosts {
        fallthrough
    }
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $n/coredns.kubeconfig coach-testenv
        pods insecure
        ttl 5
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
    loop
${COACH_TESTENV_DNS_UPSTREAM:+    forward . $COACH_TESTENV_DNS_UPSTREAM}
}
EOF
  rn_kubeconfig "$n/kubelet.kubeconfig" kubelet-client
  rn_kubeconfig "$n/kube-proxy.kubeconfig" kube-proxy
  rn_kubeconfig "$n/coredns.kubeconfig" coredns
}

# ---------------------------------------------------------------------------------------------
# images

# rn_image_archive NAME KIND OUT: the pause or busybox image as an OCI archive.
rn_image_archive() {
  local name=$1 kind=$2 out=$3 root
  root=$(mktemp -d "$DIR/node/images/rootfs.XXXXXX")
  case $kind in
    pause)
      cp "$BIN/pause" "$root/pause"
      /usr/bin/python3 "$HERE/../image/oci_from_dir.py" --rootfs "$root" --name "$name" --out "$out" \
        --entrypoint '["/pause"]' --user 65535:65535 >/dev/null ;;
    busybox)
      "$HERE/../image/busybox_rootfs.sh" "$root"
      /usr/bin/python3 "$HERE/../image/oci_from_dir.py" --rootfs "$root" --name "$name" --out "$out" \
        --cmd '["sh"]' >/dev/null ;;
  esac
  rm -rf "$root"
}

# rn_import ARCHIVE...: into the real node's containerd (namespace k8s.io, where the CRI looks).
rn_import() {
  local a
  for a in "$@"; do
    rn_ctr images import "$a" >/dev/null || { log "importing $a failed"; return 1; }
  done
}

# ---------------------------------------------------------------------------------------------
# up

rn_up_network() { # before etcd/apiserver: the API server binds the bridge address
  rn_save_host
  rn_network_up
}

rn_apiserver_args() {
  # SC2034: testenv, which sources this file, reads it. SC2054: the commas are in flag values.
  # shellcheck disable=SC2034,SC2054
  RN_APISERVER_ARGS=(
    --bind-address "$RN_ADDR" --advertise-address "$RN_ADDR"
    --endpoint-reconciler-type lease
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction
    --kubelet-client-certificate "$DIR/pki/apiserver-kubelet-client.crt"
    --kubelet-client-key "$DIR/pki/apiserver-kubelet-client.key"
    --kubelet-certificate-authority "$DIR/pki/ca.crt"
    --kubelet-preferred-address-types InternalIP
  )
}

rn_kubelet_ready() {
  [[ $(kctl get node "$RN_NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]
}
rn_endpoints_ready() {
  [[ $(kctl get endpoints kubernetes -n default -o jsonpath='{.subsets[0].addresses[0].ip}:{.subsets[0].ports[0].port}' 2>/dev/null) == "$RN_ADDR:$RN_API_PORT" ]]
}
rn_containerd_ready() { rn_ctr version; }
rn_coredns_ready() { curl -fsS "http://127.0.0.1:$RN_DNS_READY_PORT/ready"; }
rn_proxy_ready() { curl -fsS "http://127.0.0.1:$RN_PROXY_HEALTHZ_PORT/healthz"; }

rn_up_node() { # after the control plane is up
  local n=$DIR/node t0=$SECONDS
  rn_rbac
  rn_write_configs
  start containerd containerd --config "$n/containerd/config.toml" --log-level warn
  wait_for containerd 30 rn_containerd_ready
  rn_image_archive "$RN_PAUSE_IMAGE" pause "$n/images/pause.tar"
  rn_image_archive "$RN_BUSYBOX_IMAGE" busybox "$n/images/busybox.tar"
  rn_import "$n/images/pause.tar" "$n/images/busybox.tar"
  log "  containerd up, pause and busybox imported in $((SECONDS - t0)) s"
  start kubelet "$BIN/kubelet" --config "$n/kubelet.yaml" --kubeconfig "$n/kubelet.kubeconfig" \
    --root-dir "$n/kubelet" --hostname-override "$RN_NODE" --node-ip "$RN_ADDR" \
    --node-labels "$RN_LABEL=true" --v 1
  start kube-proxy "$BIN/kube-proxy" --config "$n/kube-proxy.yaml" --v 1
  start coredns "$BIN/coredns" -conf "$n/Corefile"
  wait_for kubelet 120 rn_kubelet_ready
  wait_for kube-proxy 60 rn_proxy_ready
  wait_for coredns 60 rn_coredns_ready
  wait_for "the kubernetes Service's endpoints at $RN_ADDR:$RN_API_PORT" 60 rn_endpoints_ready
  log "  real node $RN_NODE Ready in $((SECONDS - t0)) s"
}

rn_healthy() {
  local c
  for c in "${RN_COMPONENTS[@]}"; do alive "$c" || return 1; done
  rn_kubelet_ready
}

# ---------------------------------------------------------------------------------------------
# down: every step tolerates what is already gone, so it also cleans after a failed or killed up

# Kill the processes rn_processes finds (shims, containers, pause) and any in the kubepods cgroups.
rn_kill_leftover_processes() {
  local pids
  for _ in 1 2 3; do
    pids=$(rn_processes | awk '$1 == "process" {sub(":", "", $2); print $2}')
    [[ -n $pids ]] || return 0
    # shellcheck disable=SC2086  # one pid per word
    kill -KILL $pids 2>/dev/null || true
    sleep 0.5
  done
}

rn_unmount_all() {
  local m
  # Deepest first; lazily where a mount is still busy.
  awk -v d="$DIR/node/" '$2 ~ "^/var/lib/kubelet|^/run/containerd/|^/run/netns/cni-" || index($2, d) == 1 {print $2}' /proc/self/mounts |
    sort -r | while read -r m; do
      m=$(printf '%b' "$m") # /proc/mounts escapes spaces as \040
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "cannot unmount $m"
    done
}

rn_remove_cgroups() {
  local root
  for root in /sys/fs/cgroup/*/kubepods; do
    [[ -d $root ]] || continue
    find "$root" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    if [[ -d $root ]]; then log "cannot remove cgroup $root"; fi
  done
  return 0
}

rn_restore_host() {
  local p before=$DIR/node/paths.before line
  for p in "${RN_HOST_PATHS[@]}"; do
    if [[ -f $before ]] && grep -qxF "$p" "$before"; then
      # It was there before up: take only what points into DIR or was made since.
      find "$p" -mindepth 1 -maxdepth 1 -newer "$DIR/.coach-testenv" -exec rm -rf {} + 2>/dev/null || true
    else
      rm -rf "$p" 2>/dev/null || true
    fi
  done
  if [[ -f $DIR/node/sysctl.before ]]; then
    while IFS= read -r line; do sysctl -qw "$line" >/dev/null 2>&1 || true; done <"$DIR/node/sysctl.before"
  fi
}

# rn_down: pods first (through the kubelet, so the CNI tears their networks down), then the node's
# processes, then whatever is left on the host. Leaves DIR itself (cmd_down removes it).
rn_down() {
  local c owner
  owner=$(cat "$RN_OWNER" 2>/dev/null || true)
  if [[ -n $owner && $owner != "$DIR" ]]; then
    # This machine's real node is another DIR's now (this one's up failed and cleaned earlier):
    # stop only this DIR's own processes, touch nothing on the host.
    log "the real node on this machine belongs to $owner; stopping only $DIR's processes"
    for c in "${RN_COMPONENTS[@]}"; do stop_one "$c"; done
    return 0
  fi
  if [[ -n $(cat "$DIR/pids/kubelet" 2>/dev/null) ]] && alive kubelet && alive kube-apiserver; then
    for c in kube-controller-manager kube-scheduler; do stop_one "$c"; done
    kctl delete pods --all-namespaces --field-selector "spec.nodeName=$RN_NODE" --grace-period 1 \
      --wait=true --timeout 40s >/dev/null 2>&1 || log "some pods on $RN_NODE were not removed in 40 s"
  fi
  for c in coredns kube-proxy kubelet; do stop_one "$c"; done
  # Whatever the kubelet left: stop the tasks and remove the containers while containerd runs.
  if alive containerd; then
    for c in $(rn_ctr tasks list -q 2>/dev/null); do rn_ctr tasks kill -s SIGKILL "$c" >/dev/null 2>&1 || true; done
    sleep 0.5
    for c in $(rn_ctr tasks list -q 2>/dev/null); do rn_ctr tasks delete -f "$c" >/dev/null 2>&1 || true; done
    for c in $(rn_ctr containers list -q 2>/dev/null); do rn_ctr containers delete "$c" >/dev/null 2>&1 || true; done
  fi
  stop_one containerd
  rn_kill_leftover_processes
  rn_unmount_all
  rn_network_down
  rn_remove_cgroups
  rn_restore_host
  if [[ -f $RN_OWNER && $(cat "$RN_OWNER" 2>/dev/null) == "$DIR" ]]; then rm -f "$RN_OWNER"; fi
  rm -f "$RN_LOCK"
}

# real-node-clean: the same without a DIR (a killed testenv, a removed DIR). Only touches what a real
# node creates on this machine; DIR (if RN_OWNER still names it) is left for `down`.
cmd_real_node_clean() {
  [[ $(id -u) == 0 ]] || die "real-node-clean needs root"
  local owner="" c
  owner=$(cat "$RN_OWNER" 2>/dev/null || true)
  if [[ -n $owner && -d $owner/pids ]]; then
    DIR=$owner
    for c in "${RN_COMPONENTS[@]}"; do stop_one "$c"; done
  fi
  DIR=${owner:-/nonexistent-coach-testenv}
  rn_kill_leftover_processes
  rn_unmount_all
  rn_network_down
  rn_remove_cgroups
  local p
  for p in "${RN_HOST_PATHS[@]}"; do rm -rf "$p" 2>/dev/null || true; done
  rm -f "$RN_OWNER" "$RN_LOCK"
  local left
  left=$(rn_leftovers strict)
  [[ -z $left ]] || die "still left after real-node-clean:
$left"
  log "real-node-clean: nothing of a real node is left${owner:+ (its DIR $owner remains; remove it or run down on it)}"
}

cmd_real_node_check() {
  local left
  left=$(rn_leftovers strict)
  if [[ -n $left ]]; then
    printf '%s\n' "$left"
    return 1
  fi
  log "real-node-check: nothing of a real node on this machine"
}
