#!/usr/bin/env bash
# `make k8s-e2e`: buzzload's Kubernetes manifests on a real single-node
# cluster with the real k6-operator, offline (issue 31). It builds what is
# missing (build.sh, cached), writes the images (images.sh; `make image`
# first), records the machine's state, brings the cluster up inside a
# network namespace of its own (cluster.sh), deploys the operator, runs
# examples/k8s's cluster tests inside that namespace, and always tears
# everything down and checks nothing is left: no process, link, namespace,
# mount or iptables rule. Exit code: the tests', or 1 when the cluster
# could not start or something was left behind.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/versions.env"
export W=${W:-/tmp/buzzload-k8s-e2e}
export NETNS=${NETNS:-buzzload-e2e}
cache=${K8S_CACHE:-$HOME/.cache/buzzload-k8s}
export PATH=$cache/bin-$KV-$K6OP:/usr/local/go/bin:$PATH # kubectl of the cluster's version first
log() { echo "[k8s-e2e $(date +%T)] $*"; }

if [ -e "/run/netns/$NETNS" ] || [ -d "$W" ]; then
	log "a previous run's state is here ($W, netns $NETNS): tearing it down first"
	"$here/cluster.sh" down || true
	rm -rf "$W"
fi
"$here/build.sh"
mkdir -p "$W"
"$here/images.sh"
# The tests run inside the namespace, where there is no network at all:
# their modules are fetched and their binary built out here.
(cd "$root" && go mod download && go test -c -o "$W/k8s.test" ./examples/k8s/)
(cd /tmp && go mod download "github.com/grafana/k6-operator@$K6OP") # its CRDs (the binary may come from the cache); outside our module
"$here/cluster.sh" snapshot

status=0
finish() {
	"$here/cluster.sh" down || status=1
	if ! "$here/cluster.sh" check; then
		status=1
	fi
	if [ $status = 0 ]; then
		rm -rf "$W"
		log "PASSED"
	else
		log "FAILED (logs kept in $W/logs)"
	fi
	exit $status
}
trap finish EXIT
trap 'exit 130' INT TERM # Ctrl-C or a kill still tears down (the EXIT trap)

"$here/cluster.sh" up
inns() { nsenter --net="/run/netns/$NETNS" "$@"; }
export KUBECONFIG=$W/pki/admin.kubeconfig
op=$(go env GOMODCACHE)/github.com/grafana/k6-operator@$K6OP
log "k6-operator $K6OP"
inns kubectl apply --server-side -f "$op/config/crd/bases/" >/dev/null
inns kubectl apply -f "$here/operator.yaml" >/dev/null
inns kubectl -n k6-operator-system rollout status deployment/k6-operator --timeout=180s
log "tests"
cd "$root/examples/k8s"
if ! inns env BUZZLOAD_K8S_E2E="$W" KUBECONFIG="$KUBECONFIG" "$W/k8s.test" -test.count=1 -test.v -test.timeout=40m \
	-test.run "${K8S_E2E_RUN:-TestCluster}" 2>&1 | tee "$W/logs/tests.log"; then
	status=1
fi
grep -q -- '--- PASS' "$W/logs/tests.log" || status=1
grep -q -- '--- FAIL' "$W/logs/tests.log" && status=1
grep -q -- '--- SKIP' "$W/logs/tests.log" && { log "a cluster test skipped: that is a failure here"; status=1; }
inns kubectl -n k6-operator-system logs deployment/k6-operator >"$W/logs/k6-operator.log" 2>&1 || true
