#!/usr/bin/env bash
# The images `make k8s-e2e` imports into containerd (no registry: every
# pod uses imagePullPolicy Never), written as docker-archive tars in
# $W/images:
#   localhost/buzzload:e2e     the image of `make image` (podman save)
#   localhost/pause:e2e        the pod sandbox (build.sh's pause)
#   localhost/k6-operator:e2e  grafana/k6-operator's manager, static
#   localhost/starter:e2e      busybox sh + Debian's curl and its libraries
#                              (the operator's starter runs `curl`)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.env"
W=${W:-/tmp/buzzload-k8s-e2e}
cache=${K8S_CACHE:-$HOME/.cache/buzzload-k8s}
BIN=${BIN:-$cache/bin-$KV-$K6OP}
IMAGE=${IMAGE:-buzzload:dev}
out=$W/images
mkdir -p "$out"

# mkimage NAME ROOTFS ENTRYPOINT_JSON USER: a one-layer docker-archive.
mkimage() {
	local name=$1 root=$2 ep=$3 user=${4:-0} d lsha csha
	d=$(mktemp -d -p "$W")
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$root" -cf "$d/layer.tar" .
	lsha=$(sha256sum "$d/layer.tar" | cut -d' ' -f1)
	mkdir "$d/$lsha"
	mv "$d/layer.tar" "$d/$lsha/"
	printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":%s,"Env":["PATH=/usr/bin:/bin"],"User":"%s","WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"$ep" "$user" "$lsha" >"$d/config.json"
	csha=$(sha256sum "$d/config.json" | cut -d' ' -f1)
	mv "$d/config.json" "$d/$csha.json"
	printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "$csha" "$name" "$lsha" >"$d/manifest.json"
	tar -C "$d" -cf "$out/$(basename "${name%%:*}").tar" manifest.json "$csha.json" "$lsha"
	rm -rf "$d"
}

r=$W/rootfs
rm -rf "$r"
mkdir -p "$r/pause" "$r/op/etc" "$r/op/tmp" "$r/starter/bin" "$r/starter/usr/bin"
cp "$BIN/pause" "$r/pause/pause"
mkimage localhost/pause:e2e "$r/pause" '["/pause"]'
cp "$BIN/k6-operator" "$r/op/manager"
chmod 1777 "$r/op/tmp"
printf 'root:x:0:0::/:/bin/sh\nnonroot:x:65532:65532::/:/bin/sh\n' >"$r/op/etc/passwd"
mkimage localhost/k6-operator:e2e "$r/op" '["/manager"]' 65532
cp "$(command -v busybox)" "$r/starter/bin/"
for a in sh echo cat sleep; do ln -sf busybox "$r/starter/bin/$a"; done
cp /usr/bin/curl "$r/starter/usr/bin/"
for l in $(ldd /usr/bin/curl | grep -oE '/[^ ]+'); do
	mkdir -p "$r/starter$(dirname "$l")"
	cp -L "$l" "$r/starter$l"
done
mkimage localhost/starter:e2e "$r/starter" '["/bin/sh"]'
rm -rf "$r"
# The image as `make image` built it, renamed for the cluster.
podman --storage-driver vfs tag "$IMAGE" localhost/buzzload:e2e
podman --storage-driver vfs save --format docker-archive -o "$out/buzzload.tar" localhost/buzzload:e2e >/dev/null
podman --storage-driver vfs rmi localhost/buzzload:e2e >/dev/null 2>&1 || true
echo "[k8s-e2e images] $(ls "$out" | tr '\n' ' ')"
