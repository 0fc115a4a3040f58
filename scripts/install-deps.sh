#!/usr/bin/env bash
# Installs what offcpu needs to build and test on Debian 12, idempotently:
# nothing is downloaded when every package is already there.
set -euo pipefail

PACKAGES=(
	# build
	make gcc clang llvm pkg-config libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev libiberty-dev
	# report tests: the real clients of its outputs, and the fuzzer runtime
	golang-go chromium libclang-rt-14-dev libc6-dbg
	# tests and demo: the reference reader, and small tools the tests call
	linux-perf util-linux procps coreutils gawk python3
	# the kernel matrix (tests/integration/kernels.sh): Debian's kernels under QEMU
	qemu-system-x86 busybox-static cpio
	# the package (tests/integration/package.sh): man pages, the .deb and its checks
	man-db dpkg-dev debhelper build-essential lintian
)

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null; then
		SUDO=sudo
	else
		echo "install-deps: missing packages (${missing[*]}) and not root: run as root" >&2
		exit 1
	fi
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
