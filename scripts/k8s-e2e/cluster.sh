#!/usr/bin/env bash
# A real single-node Kubernetes for `make k8s-e2e`, offline, inside a
# network namespace of its own: etcd, containerd (Debian's), the control
# plane, the kubelet and kube-proxy (built by build.sh) all run with
# `nsenter --net` in namespace $NETNS, so every address the cluster uses —
# 127.0.0.1 for the API server and etcd, the node's 10.200.0.1, the pods'
# 10.244.0.0/24, the services' 10.96.0.0/16 — exists only there, and their
# iptables rules live and die with it. Processes are tracked by pid files,
# state lives in $W.
#
#   cluster.sh snapshot   record the machine's state (links, iptables, mounts, netns)
#   cluster.sh up         start the cluster (needs build.sh's binaries, images in $W/images)
#   cluster.sh down       stop everything, delete the namespace, unmount, restore sysctls
#   cluster.sh check      fail unless the machine is as the snapshot found it
#
# A machine where this cannot work (no netns, no cgroups, not root) fails
# loudly at `up`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.env"
W=${W:-/tmp/buzzload-k8s-e2e}
NETNS=${NETNS:-buzzload-e2e}
NODEIP=10.200.0.1
cache=${K8S_CACHE:-$HOME/.cache/buzzload-k8s}
BIN=${BIN:-$cache/bin-$KV-$K6OP}
export KUBECONFIG=$W/pki/admin.kubeconfig
export PATH=$BIN:$PATH # kubectl of the same version
inns() { nsenter --net="/run/netns/$NETNS" "$@"; }
CTR() { ctr -a "$W/run/containerd.sock" -n k8s.io "$@"; }
log() { echo "[k8s-e2e $(date +%T)] $*"; }
start() { # name cmd...: in the namespace, output to $W/logs/name.log
	local n=$1
	shift
	nsenter --net="/run/netns/$NETNS" "$@" >"$W/logs/$n.log" 2>&1 &
	echo $! >"$W/$n.pid"
}
fail() {
	echo "k8s-e2e: $*" >&2
	exit 1
}

# The sysctls the kubelet and kube-proxy change outside the namespace.
SYSCTLS="vm.overcommit_memory kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes"

snapshot() {
	mkdir -p "$W/before"
	state "$W/before"
}

# state writes what the run must leave as it found it into dir: links,
# network namespaces, iptables rules, mounts, the sysctls, the kubelet's
# cgroups, the directories the components make outside $W.
state() {
	local d=$1
	ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort >"$d/links"
	ip netns list | awk '{print $1}' | sort >"$d/netns"
	iptables-save | { grep -v '^#' || true; } | sed 's/\[[0-9]*:[0-9]*\]//' | sort >"$d/iptables"
	awk '{print $2}' /proc/mounts | sort >"$d/mounts"
	sysctl $SYSCTLS >"$d/sysctl" 2>/dev/null || true
	cgroups >"$d/cgroups"
	for x in /var/lib/kubelet /run/containerd /var/lib/containerd /etc/kubernetes; do [ -e $x ] && echo $x; done >"$d/dirs" || true
}

# cgroups lists the kubelet's cgroup trees (kubepods) under every
# hierarchy.
cgroups() {
	find /sys/fs/cgroup -maxdepth 2 -type d -name 'kubepods*' 2>/dev/null | sort
}

preflight() {
	[ "$(id -u)" = 0 ] || fail "must run as root (namespaces, mounts, containerd)"
	for c in ip nsenter iptables-save containerd ctr runc etcd openssl conntrack; do
		command -v $c >/dev/null || fail "$c not found (apt-get install -y iproute2 util-linux iptables containerd runc etcd-server openssl conntrack)"
	done
	[ -x /usr/lib/cni/bridge ] || fail "/usr/lib/cni/bridge not found (apt-get install -y containernetworking-plugins)"
	[ -d /sys/fs/cgroup/cpu ] || [ -f /sys/fs/cgroup/cgroup.controllers ] || fail "no cgroup hierarchy at /sys/fs/cgroup"
	for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do
		[ -x "$BIN/$c" ] || fail "$BIN/$c missing: run scripts/k8s-e2e/build.sh"
	done
}

certs() {
	mkdir -p "$W/pki"
	cd "$W/pki"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=buzzload-e2e-ca 2>/dev/null
	printf '[req]\ndistinguished_name=dn\n[dn]\n[ext]\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:127.0.0.1,IP:10.96.0.1,IP:%s\n' $NODEIP >san.cnf
	local n s
	for n in apiserver:/CN=kube-apiserver admin:/CN=admin/O=system:masters kubelet:/CN=system:node:e2e-node/O=system:nodes; do
		s=${n#*:}
		n=${n%%:*}
		openssl req -newkey rsa:2048 -nodes -keyout $n.key -out $n.csr -subj "$s" 2>/dev/null
		openssl x509 -req -in $n.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out $n.crt -days 2 -extfile san.cnf -extensions ext 2>/dev/null
	done
	openssl genrsa -out sa.key 2048 2>/dev/null
	openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
	for n in admin kubelet; do
		KUBECONFIG=$n.kubeconfig kubectl config set-cluster e2e --server=https://127.0.0.1:6443 --certificate-authority="$PWD/ca.crt" --embed-certs >/dev/null
		KUBECONFIG=$n.kubeconfig kubectl config set-credentials u --client-certificate=$n.crt --client-key=$n.key --embed-certs >/dev/null
		KUBECONFIG=$n.kubeconfig kubectl config set-context c --cluster=e2e --user=u >/dev/null
		KUBECONFIG=$n.kubeconfig kubectl config use-context c >/dev/null
	done
	cd - >/dev/null
}

up() {
	preflight
	log "up: namespace $NETNS, state in $W"
	mkdir -p "$W/logs" "$W/run" "$W/cni/net.d" "$W/pv"
	[ -f "$W/before/links" ] || snapshot
	ip netns add "$NETNS" || fail "cannot create network namespace $NETNS"
	ip -n "$NETNS" link set lo up
	ip -n "$NETNS" link add e2enode0 type bridge
	ip -n "$NETNS" addr add $NODEIP/32 dev e2enode0
	ip -n "$NETNS" link set e2enode0 up
	ip -n "$NETNS" route add 10.96.0.0/16 dev e2enode0 # ClusterIPs, before kube-proxy's DNAT
	inns sysctl -q -w net.ipv4.ip_forward=1
	sed "s|@W@|$W|g" "$here/containerd.toml" >"$W/containerd.toml"
	sed "s|@W@|$W|g" "$here/10-bridge.conflist" >"$W/cni/net.d/10-bridge.conflist"
	sed "s|@W@|$W|g; s|@NODEIP@|$NODEIP|g" "$here/kubelet.yaml" >"$W/kubelet.yaml"
	start containerd containerd --config "$W/containerd.toml"
	start etcd etcd --name e2e --data-dir "$W/etcd" --listen-client-urls http://127.0.0.1:2379 \
		--advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380 \
		--initial-advertise-peer-urls http://127.0.0.1:2380 --initial-cluster e2e=http://127.0.0.1:2380 \
		--listen-metrics-urls http://127.0.0.1:2381
	[ -f "$W/pki/admin.kubeconfig" ] || certs
	local i
	for i in $(seq 60); do CTR version >/dev/null 2>&1 && break; sleep 0.5; done
	CTR version >/dev/null || fail "containerd did not start: $(tail -5 "$W/logs/containerd.log")"
	for f in "$W"/images/*.tar; do CTR images import "$f" >/dev/null || fail "importing $f"; done
	local P=$W/pki
	# The API server listens on every address of the namespace: the pods
	# reach it through the kubernetes Service (10.96.0.1 → 10.200.0.1:6443).
	start kube-apiserver "$BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 --bind-address=0.0.0.0 --secure-port=6443 \
		--advertise-address=$NODEIP --service-cluster-ip-range=10.96.0.0/16 --client-ca-file="$P/ca.crt" \
		--tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local --service-account-key-file="$P/sa.pub" \
		--service-account-signing-key-file="$P/sa.key" --authorization-mode=Node,RBAC --allow-privileged=true \
		--kubelet-preferred-address-types=InternalIP --kubelet-client-certificate="$P/admin.crt" --kubelet-client-key="$P/admin.key"
	for i in $(seq 240); do inns kubectl get --raw /readyz >/dev/null 2>&1 && break; sleep 0.5; done
	inns kubectl get --raw /readyz >/dev/null || fail "the API server is not ready: $(tail -5 "$W/logs/kube-apiserver.log")"
	local kc="--kubeconfig=$P/admin.kubeconfig --authentication-kubeconfig=$P/admin.kubeconfig --authorization-kubeconfig=$P/admin.kubeconfig --bind-address=127.0.0.1 --leader-elect=false"
	# shellcheck disable=SC2086
	start kube-controller-manager "$BIN/kube-controller-manager" $kc --use-service-account-credentials=true \
		--service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt"
	# shellcheck disable=SC2086
	start kube-scheduler "$BIN/kube-scheduler" $kc
	start kubelet "$BIN/kubelet" --config="$W/kubelet.yaml" --kubeconfig="$P/kubelet.kubeconfig" --root-dir="$W/kubelet" \
		--cert-dir="$W/kubelet/pki" --node-ip=$NODEIP --hostname-override=e2e-node
	start kube-proxy "$BIN/kube-proxy" --kubeconfig="$P/admin.kubeconfig" --bind-address=127.0.0.1 --metrics-bind-address=127.0.0.1:10249 \
		--healthz-bind-address=127.0.0.1:10256 --cluster-cidr=10.244.0.0/16 --proxy-mode=iptables --hostname-override=e2e-node \
		--nodeport-addresses=127.0.0.1/32 --conntrack-max-per-core=0 --conntrack-tcp-timeout-established=0 \
		--conntrack-tcp-timeout-close-wait=0 # conntrack limits are the machine's: not writable from a namespace, left as they are
	for i in $(seq 240); do inns kubectl get node e2e-node >/dev/null 2>&1 && break; sleep 0.5; done
	inns kubectl wait --for=condition=Ready node/e2e-node --timeout=180s >/dev/null || fail "the node is not ready: $(tail -5 "$W/logs/kubelet.log")"
	for i in $(seq 120); do inns kubectl get sa default >/dev/null 2>&1 && break; sleep 0.5; done
	log "cluster up"
}

stoppid() {
	local f=$W/$1.pid p i
	[ -f "$f" ] || return 0
	p=$(cat "$f")
	kill "$p" 2>/dev/null && for i in $(seq 40); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
	kill -9 "$p" 2>/dev/null || true
	rm -f "$f"
}

down() {
	log "down"
	if [ -f "$W/kubelet.pid" ] && kill -0 "$(cat "$W/kubelet.pid")" 2>/dev/null; then
		# Pods first, through the kubelet: CNI removes their veths and
		# network namespaces.
		inns kubectl delete testruns.k6.io --all -A --wait=false >/dev/null 2>&1 || true
		inns kubectl delete deployments,jobs --all -A --wait=false >/dev/null 2>&1 || true
		inns kubectl delete pods --all -A --grace-period=1 --timeout=60s >/dev/null 2>&1 || true
		local i n
		for i in $(seq 60); do
			n=$(CTR t ls -q 2>/dev/null | wc -l)
			[ "$n" = 0 ] && break
			sleep 0.5
		done
	fi
	for c in kube-proxy kubelet kube-scheduler kube-controller-manager kube-apiserver etcd; do stoppid $c; done
	# Containers the kubelet could not stop.
	if [ -S "$W/run/containerd.sock" ]; then
		for t in $(CTR t ls -q 2>/dev/null); do CTR t kill -s SIGKILL "$t" >/dev/null 2>&1 || true; sleep 0.2; CTR t rm -f "$t" >/dev/null 2>&1 || true; done
		for c in $(CTR c ls -q 2>/dev/null); do CTR c rm "$c" >/dev/null 2>&1 || true; done
	fi
	stoppid containerd
	# Every process still in the namespace (containerd's shims, pods).
	if [ -e "/run/netns/$NETNS" ]; then
		for p in $(ip netns pids "$NETNS" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
		sleep 0.5
		ip netns del "$NETNS" || true
	fi
	# Pod network namespaces CNI left (named cni-* by containerd), and the
	# /run/netns mount `ip netns add` made when there was none.
	for ns in $(ip netns list | awk '{print $1}'); do
		if ! grep -qx "$ns" "$W/before/netns" 2>/dev/null && [[ $ns == cni-* ]]; then ip netns del "$ns" 2>/dev/null || true; fi
	done
	if ! grep -qx /run/netns "$W/before/mounts" 2>/dev/null && [ -z "$(ls -A /run/netns 2>/dev/null)" ]; then
		while grep -q ' /run/netns ' /proc/mounts; do umount /run/netns 2>/dev/null || break; done
	fi
	# Mounts under the state directory (kubelet volumes, containerd's
	# snapshots and shm), deepest first.
	awk -v w="$W/" 'index($2, w) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
	[ -f "$W/before/sysctl" ] && sed 's/ = /=/' "$W/before/sysctl" | xargs -r -n1 sysctl -q -w 2>/dev/null || true
	# Only what the snapshot says was not there before: without one, leave
	# the machine's kubelet and containerd directories alone.
	if [ ! -f "$W/before/dirs" ] || [ ! -f "$W/before/cgroups" ]; then
		log "down done (no snapshot: cgroups and directories outside $W left as they are)"
		return 0
	fi
	# The kubelet's cgroups (empty once every pod is gone), deepest first.
	for c in $(cgroups); do
		grep -qx "$c" "$W/before/cgroups" 2>/dev/null && continue
		find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null || true
	done
	# Directories the kubelet and containerd make outside the state
	# directory when they were not there before.
	for d in /var/lib/kubelet /run/containerd /var/lib/containerd /etc/kubernetes; do
		[ -e $d ] && ! grep -qx $d "$W/before/dirs" 2>/dev/null && rm -rf $d
	done
	log "down done"
}

check() {
	local bad=0 tmp
	tmp=$(mktemp -d)
	state "$tmp"
	for f in links netns iptables mounts sysctl cgroups dirs; do
		if ! diff -u "$W/before/$f" "$tmp/$f" >"$tmp/$f.diff"; then
			echo "k8s-e2e: the machine's $f differ from before the run:" >&2
			cat "$tmp/$f.diff" >&2
			bad=1
		fi
	done
	if pgrep -f "$W/" >/dev/null 2>&1; then
		echo "k8s-e2e: processes of the run are still alive:" >&2
		pgrep -af "$W/" >&2
		bad=1
	fi
	rm -rf "$tmp"
	[ $bad = 0 ] || exit 1
	log "the machine is as it was: no process, link, namespace, mount, cgroup or iptables rule left"
}

case "${1:-}" in
snapshot) snapshot ;;
up) up ;;
down) down ;;
check) check ;;
*) echo "usage: cluster.sh snapshot|up|down|check" >&2; exit 2 ;;
esac
