#!/usr/bin/env bash
# Builds what `make k8s-e2e` runs that Debian does not ship: the Kubernetes
# node and control-plane binaries (from k8s.io/kubernetes on the Go module
# proxy, in a scratch module of their own: buzzload's go.mod never sees
# Kubernetes), grafana/k6-operator (Apache-2.0, from its module) and a pause
# binary. Everything lands in $K8S_CACHE/bin (default
# ~/.cache/buzzload-k8s) and is reused: a cold build took 8.5 minutes
# on 2 cores, a warm one nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.env"
cache=${K8S_CACHE:-$HOME/.cache/buzzload-k8s}
bin=$cache/bin-$KV-$K6OP
export PATH=/usr/local/go/bin:$PATH GOFLAGS=-mod=mod
mkdir -p "$bin" "$cache/src"
log() { echo "[k8s-e2e build $(date +%T)] $*"; }

cmds="kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl"
missing=0
for c in $cmds; do [ -x "$bin/$c" ] || missing=1; done
if [ $missing = 1 ]; then
	log "Kubernetes v$KV (cold: about 9 minutes)"
	src=$cache/src/k8s-$KV
	mkdir -p "$src"
	cd "$src"
	go mod download "k8s.io/kubernetes@v$KV"
	# k8s.io/kubernetes replaces its staging modules with ./staging paths;
	# outside its tree each one is the published v0.<minor>.<patch>.
	{
		printf 'module buzzload.local/k8s-e2e\n\ngo 1.24.0\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n' "$KV"
		sed -n '/^replace (/,/^)/p' "$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/v$KV.mod" |
			awk -v v="v0.${KV#1.}" '/=>/ {print "\t" $1 " => " $1 " " v}'
		echo ')'
	} >go.mod
	go get $(for c in $cmds; do echo "k8s.io/kubernetes/cmd/$c@v$KV"; done)
	ld="-s -w -X k8s.io/component-base/version.gitVersion=v$KV -X k8s.io/component-base/version.gitMajor=1"
	ld="$ld -X k8s.io/component-base/version.gitMinor=$(echo "$KV" | cut -d. -f2) -X k8s.io/component-base/version.gitTreeState=clean"
	ld="$ld -X k8s.io/client-go/pkg/version.gitVersion=v$KV"
	CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$bin/" $(for c in $cmds; do echo "k8s.io/kubernetes/cmd/$c"; done)
fi
if [ ! -x "$bin/k6-operator" ]; then
	log "k6-operator $K6OP"
	(cd /tmp && go mod download "github.com/grafana/k6-operator@$K6OP")
	rm -rf "$cache/src/k6op"
	cp -r "$(go env GOMODCACHE)/github.com/grafana/k6-operator@$K6OP" "$cache/src/k6op"
	chmod -R u+w "$cache/src/k6op"
	(cd "$cache/src/k6op" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$bin/k6-operator" .)
fi
if [ ! -x "$bin/pause" ]; then
	mkdir -p "$cache/src/pause"
	cp "$here/pause.go.txt" "$cache/src/pause/main.go"
	(cd "$cache/src/pause" && printf 'module buzzload.local/pause\n\ngo 1.24\n' >go.mod && CGO_ENABLED=0 go build -ldflags '-s -w' -o "$bin/pause" .)
fi
log "binaries in $bin"
echo "$bin" >"$cache/bin-path"
