#!/usr/bin/env bash
# fetch-kernel.sh SERIES: print the path of a Debian 12 cloud kernel image
# (vmlinuz) of SERIES (6.1: bookworm's own; 6.12: bookworm's 6.12 series),
# the newest the configured apt sources offer, fetched with apt-get download
# and unpacked with dpkg-deb. Kernels are cached in OFFCPU_KERNEL_CACHE
# (default /var/cache/offcpu-kernels): a second run downloads nothing.
# Exit 77 with the reason on stderr when no such kernel can be had.
set -euo pipefail

series=${1:?usage: fetch-kernel.sh 6.1|6.12}
cache=${OFFCPU_KERNEL_CACHE:-/var/cache/offcpu-kernels}

case $series in
6.1) re='^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$' ;;
6.12) re='^linux-image-6\.12\.[0-9]+\+deb12-cloud-amd64-unsigned$' ;;
*) echo "fetch-kernel: unknown series $series" >&2; exit 2 ;;
esac

newest() {
	apt-cache search --names-only "$re" 2>/dev/null | awk '{ print $1 }' | grep -E "$re" | sort -V | tail -n 1
}

pkg=$(newest || true)
if [ -z "$pkg" ] && [ "$(id -u)" -eq 0 ]; then
	# a fresh machine may have no package lists yet
	apt-get update -qq >/dev/null 2>&1 || true
	pkg=$(newest || true)
fi
if [ -z "$pkg" ]; then
	# no package lists (or no network): a kernel cached earlier still serves
	cached=$(ls -d "$cache"/*/ 2>/dev/null | xargs -rn1 basename | grep -E "$re" | sort -V | tail -n 1 || true)
	if [ -n "$cached" ] && [ -s "$cache/$cached/vmlinuz" ]; then
		echo "$cache/$cached/vmlinuz"
		exit 0
	fi
	echo "no package matching $re in the apt sources, and none cached in $cache" >&2
	exit 77
fi

dir=$cache/$pkg
if [ -s "$dir/vmlinuz" ]; then
	echo "$dir/vmlinuz"
	exit 0
fi
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# apt's sandbox user must be able to write the download directory
chmod 755 "$tmp"
if ! (cd "$tmp" && apt-get download -q "$pkg" >download.log 2>&1); then
	sed 's/^/  /' "$tmp/download.log" >&2
	echo "apt-get download $pkg failed" >&2
	exit 77
fi
mkdir -p "$tmp/x"
dpkg-deb -x "$tmp"/*.deb "$tmp/x"
mkdir -p "$tmp/out"
cp "$tmp"/x/boot/vmlinuz-* "$tmp/out/vmlinuz"
cp "$tmp"/x/boot/config-* "$tmp/out/config"
rm -rf "$dir"
mv "$tmp/out" "$dir"
# a newer package of the series replaces the cached one
for old in "$cache"/*/; do
	old=$(basename "$old")
	[ "$old" = "$pkg" ] || ! grep -qE "$re" <<<"$old" || rm -rf "${cache:?}/$old"
done
echo "$dir/vmlinuz"
