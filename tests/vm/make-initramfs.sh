#!/usr/bin/env bash
# make-initramfs.sh OUT: a gzip'ed cpio initramfs that runs offcpu's kernel
# matrix checks (tests/vm/init.sh) on whatever kernel boots it: busybox
# (static), build/offcpu and the ground-truth workload, with the shared
# libraries ldd lists and the loader. Everything the guest needs is in it:
# no disk, no network, no modules.
set -euo pipefail

out=${1:?usage: make-initramfs.sh OUT}
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-build}
busybox=/bin/busybox
[ -x "$busybox" ] && file_is_static=$(ldd "$busybox" 2>&1 | grep -c "not a dynamic" || true) || file_is_static=0
if [ "$file_is_static" = 0 ]; then
	echo "make-initramfs: $busybox is missing or not static (apt-get install busybox-static)" >&2
	exit 77
fi
command -v cpio >/dev/null || { echo "make-initramfs: cpio missing" >&2; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
r=$tmp/root
mkdir -p "$r"/{bin,sbin,proc,sys,dev,tmp,run,vm,etc}
cp "$busybox" "$r/bin/busybox"
cp "$ROOT/tests/vm/init.sh" "$r/init"
chmod 755 "$r/init"
cp "$ROOT/$BUILD/offcpu" "$ROOT/$BUILD/tests/groundtruth" "$ROOT/$BUILD/tests/wakers" \
	"$ROOT/$BUILD/tests/locks" "$ROOT/$BUILD/tests/abba" "$r/vm/"
# the shared libraries (and the loader) of the programs, at their own paths
for lib in $(ldd "$ROOT/$BUILD/offcpu" "$ROOT/$BUILD/tests/groundtruth" "$ROOT/$BUILD/tests/wakers" \
	"$ROOT/$BUILD/tests/locks" "$ROOT/$BUILD/tests/abba" |
	awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\/.*[^:]$/ { print $1 }' | sort -u); do
	mkdir -p "$r$(dirname "$lib")"
	cp -L "$lib" "$r$lib"
done
# the loader's multiarch name, however ldd spelled it
mkdir -p "$r/lib64"
[ -e "$r/lib64/ld-linux-x86-64.so.2" ] || cp -L /lib64/ld-linux-x86-64.so.2 "$r/lib64/"
(cd "$r" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
