#!/usr/bin/env bash
# Installs from Debian 12's packages what offcpu needs, idempotently: nothing
# is downloaded when every package is already there.
#
#   scripts/install-deps.sh                   what `make demo` needs: build offcpu, record, read with perf
#   scripts/install-deps.sh --check           that, and what `make check`'s tests need
#   scripts/install-deps.sh --print [--check] list those packages, one a line; install nothing
set -euo pipefail

# Building and recording: what `make` and the demo run, and what offcpu links
# (libbpf, libelf, libdw, zlib, libiberty; libdw brings liblzma and libbz2).
DEMO=(
	# the C compiler and its headers, make, clang for the BPF program
	gcc libc6-dev make clang
	# bpftool writes vmlinux.h and the skeleton; pkg-config finds libbpf
	bpftool pkgconf
	# the libraries offcpu links (libdebuginfod: report fetches debug files by build id;
	# libcurl: record --push sends profiles over HTTP and HTTPS)
	libbpf-dev libelf-dev libdw-dev zlib1g-dev libiberty-dev libdebuginfod-dev libcurl4-openssl-dev
	# the demo shows perf report reading the recording
	linux-perf
)

# The tests: the real clients of offcpu's outputs and the tools they call.
CHECK=(
	# report: go tool pprof reads the profiles, chromium renders the flame graph,
	# the fuzzers' runtime, libc's debug file for the separate-debug-file tests
	golang-go chromium libclang-rt-14-dev libc6-dbg
	# report --perfetto: protoc --decode_raw reads the trace back (tests/integration/timeline.sh);
	# record --push: its OTLP requests decoded by code protoc generates (tests/integration/push.sh)
	protobuf-compiler python3-protobuf
	# workloads and tools the tests run (setpriv, pgrep, python3 threads, strace -f, git ls-files)
	util-linux procps coreutils gawk python3 strace git
	# runtimes: Python's offsets checked against its DWARF, a node JIT (and the
	# browser tests' driver, playwright-core from npm: node 18 or newer), a JVM
	# and its jcmd (perf maps written at its exit and mid-run), a local
	# debuginfod server
	python3.11-dbg nodejs openjdk-17-jdk-headless debuginfod
	# the kernel matrix (tests/integration/kernels.sh): Debian's kernels under QEMU
	qemu-system-x86 busybox-static cpio
	# a real server's critical path (tests/integration/critpath.sh): postgres and pgbench
	postgresql-15 postgresql-client-15
	# the package (tests/integration/package.sh): man pages, the .deb and lintian
	man-db dpkg-dev debhelper build-essential lintian
)

# Commands the tests run that a machine may have from elsewhere than Debian's
# packages (this project's machine image has npm from npm itself, and a node
# of its own beside it, which Debian's npm package would not go with): the
# package is installed only when its command is missing. COMMAND:PACKAGE
CHECK_COMMANDS=(
	# npm ci brings the browser tests' playwright-core (tests/integration/timeline_html.sh)
	npm:npm
)

usage() {
	echo "usage: scripts/install-deps.sh [--check] [--print]" >&2
	exit 2
}

check=0
print=0
for arg in "$@"; do
	case $arg in
	--check) check=1 ;;
	--print) print=1 ;;
	-h | --help) sed -n '2,7s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) usage ;;
	esac
done

packages=("${DEMO[@]}")
commands=()
what="make demo"
if [ $check -eq 1 ]; then
	packages+=("${CHECK[@]}")
	commands+=("${CHECK_COMMANDS[@]}")
	what="make demo and make check"
fi

if [ $print -eq 1 ]; then
	printf '%s\n' "${packages[@]}" "${commands[@]#*:}"
	exit 0
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
for c in "${commands[@]}"; do
	command -v "${c%%:*}" >/dev/null || missing+=("${c#*:}")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all $((${#packages[@]} + ${#commands[@]})) packages for $what are installed"
	exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null; then
		SUDO=(sudo)
	else
		echo "install-deps: $what needs ${missing[*]}, and this is not root: run as root" >&2
		exit 1
	fi
fi
echo "install-deps: installing for $what, with their dependencies: ${missing[*]}"
# no question asked (CI has no terminal); sudo would drop an exported variable
apt=("${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get)
"${apt[@]}" update -qq
"${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: installed ${missing[*]}"
