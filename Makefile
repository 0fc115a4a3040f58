# offcpu: an off-CPU profiler writing perf.data
#
#   make            build build/offcpu
#   make check      install deps (--check), unit tests (also under ASan+UBSan), integration tests (root),
#                   the kernel matrix (Debian 12 kernels under QEMU: tests/vm/)
#                   (T=name runs only the tests whose name contains it)
#   make demo       install build deps, build, record the bundled demo, report it
#   make install    PREFIX=/usr/local DESTDIR=

PREFIX ?= /usr/local
DESTDIR ?=
BUILD ?= build

CC ?= cc
CLANG ?= clang
BPFTOOL ?= $(shell command -v bpftool 2>/dev/null || echo /usr/sbin/bpftool)
PKG_CONFIG ?= pkg-config
VERSION := 0.1.0

ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' -e 's/ppc64le/powerpc/' -e 's/s390x/s390/')
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux

LIBS := $(shell $(PKG_CONFIG) --libs libbpf 2>/dev/null || echo -lbpf -lelf -lz) -lelf -ldw -lz -liberty -Wl,--push-state,--no-as-needed -ldebuginfod -Wl,--pop-state -lcurl -lpthread
WARN := -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
CFLAGS ?= -O2 -g
override CFLAGS += $(WARN) -std=gnu11 -D_GNU_SOURCE -DOFFCPU_VERSION='"$(VERSION)"' -I$(BUILD) -Isrc
# Test hooks: the OFFCPU_FAULT_* and other OFFCPU_* variables the tests and
# benchmarks set (util.h test_hook()), built in with TEST_HOOKS=1, and in any
# build directory named test (make check builds and tests build/test). Any
# other build (make, install, the package) has none.
TEST_HOOKS ?= $(if $(filter test,$(notdir $(BUILD))),1)
HOOKS := $(if $(TEST_HOOKS),-DOFFCPU_TEST_HOOKS)
override CFLAGS += $(HOOKS)
# a build directory holds objects of one kind: a change rebuilds them all
HOOKS_STAMP := $(BUILD)/hooks

# every source of a part's folder is built: a new file needs no line here
CORE_SRCS := $(sort $(wildcard src/util/*.c src/perfdata/*.c))
RECORD_SRCS := $(sort $(wildcard src/record/*.c src/unwind/*.c))
# the report's sources; its .S files embed what is no C (the timeline page's assets)
REPORT_SRCS := $(sort $(wildcard src/report/*.c src/report/*.S))
REPORT_ASSETS := $(wildcard src/report/timeline/*)
PUSH_SRCS := $(sort $(wildcard src/push/*.c))
APP_SRCS := src/main.c $(CORE_SRCS) $(RECORD_SRCS) $(REPORT_SRCS) $(PUSH_SRCS)
APP_OBJS := $(patsubst src/%.S,$(BUILD)/obj/%.o,$(patsubst src/%.c,$(BUILD)/obj/%.o,$(APP_SRCS)))

# the unit tests: all of report but its commands (report.c, critpath_cmd.c), the parts of record that need no BPF
REPORT_LIB_SRCS := $(filter-out src/report/report.c src/report/critpath_cmd.c,$(REPORT_SRCS))
UNIT_SRCS := $(sort $(wildcard tests/unit/*.c)) $(REPORT_LIB_SRCS) \
	src/record/options.c src/record/summary.c src/record/target.c src/record/rings.c src/record/pylayout.c src/record/v8layout.c $(sort $(wildcard src/unwind/*.c)) \
	src/push/config.c src/push/meta.c src/push/otlp.c src/push/interval.c
WORKLOADS := $(BUILD)/tests/groundtruth $(BUILD)/tests/spin $(BUILD)/tests/gt_nofp $(BUILD)/tests/stacks $(BUILD)/tests/sighandler $(BUILD)/tests/wakers \
	$(BUILD)/tests/hostile
WORKLOADS += $(BUILD)/tests/hang $(BUILD)/tests/fusehang $(BUILD)/tests/fakepy $(BUILD)/tests/fakepy314 $(BUILD)/tests/critpath \
	$(BUILD)/tests/locks $(BUILD)/tests/abba

.PHONY: all clean check check-run test-run unit demo install deps bench FORCE

all: $(BUILD)/offcpu

$(BUILD)/vmlinux.h:
	@mkdir -p $(@D)
	@test -r $(VMLINUX_BTF) || { echo "error: $(VMLINUX_BTF) not found: a kernel with BTF is needed to build" >&2; exit 1; }
	$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

$(HOOKS_STAMP): FORCE
	@mkdir -p $(@D)
	@[ "$$(cat $@ 2>/dev/null)" = "hooks=$(HOOKS)" ] || echo "hooks=$(HOOKS)" >$@

$(BUILD)/offcpu.bpf.o: src/bpf/offcpu.bpf.c $(wildcard src/bpf/*.bpf.h) src/offcpu.h src/korc_abi.h $(BUILD)/vmlinux.h $(HOOKS_STAMP)
	$(CLANG) -g -O2 -Wall -target bpf -D__TARGET_ARCH_$(ARCH) $(HOOKS) -I$(BUILD) -Isrc -c $< -o $@

$(BUILD)/offcpu.skel.h: $(BUILD)/offcpu.bpf.o
	$(BPFTOOL) gen skeleton $< name offcpu_bpf > $@.tmp && mv $@.tmp $@

# assets are read by the assembler at build time, by their paths from here
$(BUILD)/obj/%.o: src/%.S $(REPORT_ASSETS)
	@mkdir -p $(@D)
	$(CC) -c $< -o $@

$(BUILD)/obj/%.o: src/%.c $(wildcard src/*.h src/*/*.h) $(HOOKS_STAMP) | $(BUILD)/offcpu.skel.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# The collector embeds the BPF object through its skeleton: a changed BPF
# program must rebuild it, not only a missing skeleton.
$(BUILD)/obj/record/collector.o: $(BUILD)/offcpu.skel.h

$(BUILD)/offcpu: $(APP_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LIBS)

# Unit tests need no root; they are built twice: plain and with sanitizers.
# realloc is wrapped so that tests can make it fail (test_queue.c).
UNIT_LDFLAGS := -Wl,--wrap=realloc
$(BUILD)/tests/unit: $(UNIT_SRCS) $(CORE_SRCS) $(wildcard src/*/*.h tests/unit/*.h) $(REPORT_ASSETS) $(HOOKS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests/unit $(UNIT_SRCS) $(CORE_SRCS) -o $@ $(UNIT_LDFLAGS) $(LIBS)

$(BUILD)/tests/unit-asan: $(UNIT_SRCS) $(CORE_SRCS) $(wildcard src/*/*.h tests/unit/*.h) $(REPORT_ASSETS) $(HOOKS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
		-Itests/unit $(UNIT_SRCS) $(CORE_SRCS) -o $@ $(UNIT_LDFLAGS) $(LIBS)

# the table walk's ground truth: no frame pointers anywhere
$(BUILD)/tests/gt_nofp: tests/workloads/gt_nofp.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -fomit-frame-pointer -Wall -Wextra -pthread $< -o $@

# looks like CPython 3.11 to offcpu: its symbols in .dynsym
$(BUILD)/tests/fakepy: tests/workloads/fakepy.c src/offcpu.h src/record/pylayout.h
	@mkdir -p $(@D)
	$(CC) -O1 -g -rdynamic -Wall -Wextra -pthread $< -o $@

# the same, as a CPython 3.14 (a version offcpu has no layout of)
$(BUILD)/tests/fakepy314: tests/workloads/fakepy.c src/offcpu.h src/record/pylayout.h
	@mkdir -p $(@D)
	$(CC) -O1 -g -rdynamic -Wall -Wextra -pthread -DFAKEPY_VERSION=0x030e00f0 $< -o $@

$(BUILD)/tests/%: tests/workloads/%.c
	@mkdir -p $(@D)
	$(CC) -O1 -g -fno-omit-frame-pointer -fno-inline -Wall -Wextra -pthread $< -o $@

# check installs what is missing first (what building needs and the tests' tools),
# so it works on a fresh Debian 12 machine.
check:
	bash scripts/install-deps.sh --check
	$(MAKE) check-run

# the tests run a build of their own, with the test hooks, in $(BUILD)/test
check-run:
	$(MAKE) BUILD=$(BUILD)/test test-run T="$(T)"

test-run: $(BUILD)/offcpu $(BUILD)/tests/unit $(BUILD)/tests/unit-asan $(WORKLOADS)
	BUILD=$(BUILD) bash tests/run.sh $(T)

unit: $(BUILD)/tests/unit $(BUILD)/tests/unit-asan
	$(BUILD)/tests/unit && $(BUILD)/tests/unit-asan

# libFuzzer target for the reader (clang, libclang-rt-14-dev); tests/integration/report.sh runs it.
FUZZ_SRCS := src/util/util.c src/perfdata/sample.c src/perfdata/reader.c src/perfdata/reader_open.c src/perfdata/reader_file.c src/perfdata/reader_pipe.c src/perfdata/input.c
$(BUILD)/tests/fuzz-reader: tests/fuzz/fuzz_reader.c $(FUZZ_SRCS) $(wildcard src/perfdata/*.h)
	@mkdir -p $(@D)
	$(CLANG) -g -O1 -std=gnu11 -D_GNU_SOURCE -Isrc -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all $< $(FUZZ_SRCS) -o $@

FUZZ_SESSION_SRCS := $(FUZZ_SRCS) src/perfdata/queue.c src/perfdata/wakers.c src/perfdata/waits.c src/util/hashmap.c src/util/procmaps.c src/util/kallsyms.c src/util/elf.c src/util/objread.c src/util/mounts.c src/util/ranges.c src/util/outfile.c src/util/safepath.c src/util/intset.c src/util/pmtext.c \
	$(REPORT_LIB_SRCS) src/unwind/oracle.c
$(BUILD)/tests/fuzz-session: tests/fuzz/fuzz_session.c $(FUZZ_SESSION_SRCS) $(wildcard src/*/*.h) $(REPORT_ASSETS)
	@mkdir -p $(@D)
	$(CLANG) -g -O1 -std=gnu11 -D_GNU_SOURCE -Isrc -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all $< $(FUZZ_SESSION_SRCS) -o $@ -lelf -ldw -lz -liberty

# The unwind table builder: the objects it reads are other users' (tests/integration/hostile.sh runs it).
FUZZ_TABLES_SRCS := src/unwind/tables.c src/unwind/ehframe.c src/util/objread.c src/util/mounts.c src/util/hashmap.c src/util/util.c
$(BUILD)/tests/fuzz-tables: tests/fuzz/fuzz_tables.c $(FUZZ_TABLES_SRCS) $(wildcard src/*/*.h src/*.h)
	@mkdir -p $(@D)
	$(CLANG) -g -O1 -std=gnu11 -D_GNU_SOURCE -Isrc -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all $< $(FUZZ_TABLES_SRCS) -o $@

fuzz: $(BUILD)/tests/fuzz-reader $(BUILD)/tests/fuzz-session $(BUILD)/tests/fuzz-tables

# Report benchmark: bench/report.sh builds this generator of large perf.data files.
$(BUILD)/bench/gen-perfdata: bench/gen-perfdata.c src/perfdata/writer.c src/perfdata/sample.c src/util/util.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $^ -o $@ -lelf

bench-gen: $(BUILD)/bench/gen-perfdata

# Overhead benchmark (bench/overhead): the bare sched_switch probes and the handoff workload.
$(BUILD)/bench/probe.bpf.o: bench/probe/probe.bpf.c $(BUILD)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) -g -O2 -Wall -target bpf -D__TARGET_ARCH_$(ARCH) -I$(BUILD) -c $< -o $@

$(BUILD)/bench/probe.skel.h: $(BUILD)/bench/probe.bpf.o
	$(BPFTOOL) gen skeleton $< name probe_bpf > $@.tmp && mv $@.tmp $@

$(BUILD)/bench/probe: bench/probe/probe.c $(BUILD)/bench/probe.skel.h
	$(CC) $(CFLAGS) -I$(BUILD)/bench $< -o $@ $(LIBS)

$(BUILD)/bench/handoff: bench/handoff.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fno-omit-frame-pointer -pthread $< -o $@

$(BUILD)/bench/runstat: bench/runstat.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@

$(BUILD)/bench/stuck: bench/stuck.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -pthread $< -o $@

bench: $(BUILD)/offcpu $(BUILD)/bench/probe $(BUILD)/bench/handoff $(BUILD)/bench/runstat $(BUILD)/bench/stuck

# deps: everything make check needs (scripts/install-deps.sh --print --check lists it)
deps:
	bash scripts/install-deps.sh --check

# demo installs only what building and recording need (scripts/install-deps.sh --print)
demo:
	bash scripts/install-deps.sh
	$(MAKE) all $(BUILD)/tests/groundtruth
	bash scripts/demo.sh

MANPAGES := doc/offcpu.1 doc/offcpu-record.1 doc/offcpu-report.1

install: $(BUILD)/offcpu
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 0755 $(BUILD)/offcpu $(DESTDIR)$(PREFIX)/bin/offcpu
	install -m 0644 $(MANPAGES) $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 completion/offcpu.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/offcpu

clean:
	rm -rf $(BUILD)
