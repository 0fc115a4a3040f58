#!/usr/bin/env bash
# arm64-vmlinux.sh: print the path of a vmlinux.h for arm64, generated from
# the BTF inside Debian 12's arm64 cloud kernel image, so that the BPF object
# can be built for arm64 on this x86-64 machine (tests/integration/kernels.sh).
# The arm64 package lists live in a private apt state under the cache; the
# machine's own apt configuration is not touched. Cached in
# OFFCPU_KERNEL_CACHE (default /var/cache/offcpu-kernels). Exit 77 with the
# reason on stderr when it cannot be had.
set -euo pipefail

cache=${OFFCPU_KERNEL_CACHE:-/var/cache/offcpu-kernels}
BPFTOOL=${BPFTOOL:-$(command -v bpftool || echo /usr/sbin/bpftool)}
re='^linux-image-6\.1\.0-[0-9]+-cloud-arm64-unsigned$'
state=$cache/apt-arm64
mkdir -p "$state/lists/partial" "$state/cache/archives/partial"
chmod 755 "$state" "$state/lists" "$state/cache"
apt_arm64=(-o APT::Architecture=arm64 -o APT::Architectures::=arm64
	-o Dir::State::Lists="$state/lists" -o Dir::Cache="$state/cache"
	-o Dir::State::status=/dev/null -q)

newest() {
	apt-cache "${apt_arm64[@]}" search --names-only "$re" 2>/dev/null | awk '{ print $1 }' |
		grep -E "$re" | sort -V | tail -n 1
}

pkg=$(newest || true)
if [ -z "$pkg" ]; then
	apt-get "${apt_arm64[@]}" update >"$state/update.log" 2>&1 || true
	pkg=$(newest || true)
fi
if [ -z "$pkg" ]; then
	cached=$(ls "$cache"/arm64-*/vmlinux.h 2>/dev/null | sort -V | tail -n 1 || true)
	[ -z "$cached" ] || { echo "$cached"; exit 0; }
	echo "no arm64 kernel package ($re) in the apt sources, none cached" >&2
	exit 77
fi
dir=$cache/arm64-$pkg
if [ -s "$dir/vmlinux.h" ]; then
	echo "$dir/vmlinux.h"
	exit 0
fi
tmp=$(mktemp -d "$cache/.arm64.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
if ! (cd "$tmp" && apt-get "${apt_arm64[@]}" download "$pkg:arm64" >download.log 2>&1); then
	sed 's/^/  /' "$tmp/download.log" >&2
	echo "apt-get download $pkg:arm64 failed" >&2
	exit 77
fi
dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -x -C "$tmp" --wildcards './boot/vmlinuz-*'
# the image (uncompressed on arm64) holds the kernel's .BTF section: find its
# header (magic 0xeb9f, version 1, 24-byte header) and cut it out
python3 - "$tmp"/boot/vmlinuz-* "$tmp/vmlinux.btf" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
if d[:2] == b'\x1f\x8b':
    import gzip
    d = gzip.decompress(d)
best, i = None, 0
while True:
    i = d.find(b'\x9f\xeb\x01\x00\x18\x00\x00\x00', i)
    if i < 0:
        break
    _, toff, tlen, soff, slen = struct.unpack_from('<IIIII', d, i + 4)
    size = 24 + max(toff + tlen, soff + slen)
    if best is None or size > best[1]:
        best = (i, size)
    i += 1
if not best:
    sys.exit('no BTF in the image')
open(sys.argv[2], 'wb').write(d[best[0]:best[0] + best[1]])
PY
mkdir -p "$tmp/out"
"$BPFTOOL" btf dump file "$tmp/vmlinux.btf" format c >"$tmp/out/vmlinux.h"
rm -rf "$dir"
mv "$tmp/out" "$dir"
echo "$dir/vmlinux.h"
