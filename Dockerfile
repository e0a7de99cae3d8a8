# The buzzload runner image: the static binary (CGO_ENABLED=0) on an empty
# base, plus Debian's busybox-static for the shell k6-operator's initializer
# runs (sh, cat, grep; docs k6-operator.md "The three kinds of pod").
#
# Build it with `make image`: scripts/image.sh lays out a small context
# (out/image/) holding this file and rootfs/:
#   /usr/bin/buzzload           the binary, the entrypoint
#   /usr/bin/k6 -> buzzload     the operator runs `k6 archive|inspect|run` literally
#   /bin/busybox + applet links sh, cat, grep, find, date, sleep, ...
#   /etc/ssl/certs/ca-certificates.crt   TLS roots for wss:// and https:// targets
#   /tmp                        mode 1777 (the initializer writes /tmp/*.archived.tar)
# The links are made on the host: FROM scratch has no shell to RUN with, and
# one COPY layer keeps the vfs storage driver fast.
FROM scratch
COPY rootfs/ /
ENV PATH=/usr/local/bin:/usr/bin:/bin
USER 10001:10001
WORKDIR /
ENTRYPOINT ["/usr/bin/buzzload"]
