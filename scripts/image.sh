#!/bin/sh
# Builds the buzzload image with podman (see Dockerfile for its layout):
#
#   scripts/image.sh [TAG] [CONTEXT_DIR]     (defaults: buzzload:dev out/image)
#
# 1. a static binary: CGO_ENABLED=0 go build -trimpath (GO, LDFLAGS from the
#    environment; the Makefile passes its own), so unchanged code gives an
#    identical file and podman reuses its cached layer;
# 2. the context: only the Dockerfile and rootfs/ (the binary, the k6 link,
#    busybox and its applet links, the CA bundle, /tmp 1777);
# 3. podman build, exactly as this kind of machine allows as root:
#    podman --storage-driver vfs build --isolation chroot -t TAG CONTEXT
#
# BUZZLOAD_BIN, when set, is a static binary to use instead of building one.
# BUSYBOX names the static busybox (default: busybox on PATH; Debian's
# busybox-static). A dynamic busybox is refused: the image has no libc.
set -eu

tag=${1:-buzzload:dev}
ctx=${2:-out/image}
root=$(cd "$(dirname "$0")/.." && pwd)
bb=${BUSYBOX:-$(command -v busybox || true)}
[ -n "$bb" ] || { echo "image.sh: busybox not found (apt-get install busybox-static)" >&2; exit 1; }
if command -v file >/dev/null && ! file -L "$bb" | grep -q 'statically linked'; then
	echo "image.sh: $bb is not statically linked (apt-get install busybox-static)" >&2
	exit 1
fi
command -v podman >/dev/null || { echo "image.sh: podman not found (apt-get install podman runc)" >&2; exit 1; }

mkdir -p "$ctx"
ctx=$(cd "$ctx" && pwd)
rm -rf "$ctx/rootfs" "$ctx/Dockerfile" # only what this script lays out
mkdir -p "$ctx/rootfs/usr/bin" "$ctx/rootfs/bin" "$ctx/rootfs/tmp" "$ctx/rootfs/etc/ssl/certs"
if [ -n "${BUZZLOAD_BIN:-}" ]; then # a static binary built already (tests)
	cp "$BUZZLOAD_BIN" "$ctx/rootfs/usr/bin/buzzload"
else
	(cd "$root" && CGO_ENABLED=0 ${GO:-go} build -trimpath -ldflags "${LDFLAGS:--s -w}" \
		-o "$ctx/rootfs/usr/bin/buzzload" ./cmd/buzzload)
fi
ln -s buzzload "$ctx/rootfs/usr/bin/k6"
cp "$bb" "$ctx/rootfs/bin/busybox"
for a in $("$bb" --list); do
	[ "$a" = busybox ] || ln -s busybox "$ctx/rootfs/bin/$a"
done
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
	cp /etc/ssl/certs/ca-certificates.crt "$ctx/rootfs/etc/ssl/certs/"
fi
chmod 1777 "$ctx/rootfs/tmp"
# Fixed times: the layer's content, not the day it was built, decides the cache.
find "$ctx/rootfs" -exec touch -h -d @0 {} +
cp "$root/Dockerfile" "$ctx/Dockerfile"
podman --storage-driver vfs build --isolation chroot -t "$tag" "$ctx"
