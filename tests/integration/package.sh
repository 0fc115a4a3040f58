# shellcheck shell=bash
# What a packaged offcpu brings: --version, man pages that agree with --help
# and render without warnings, bash completion, make install's layout, and a
# Debian package that builds, passes lintian and installs.

MANDIR=$ROOT/doc

# help_options CMD: the options "offcpu CMD --help" lists, one per line
help_options() {
	"$OFFCPU" "$1" --help | grep -E '^ +-' |
		grep -oE -- '^ +(-[A-Za-z?], )?--?[A-Za-z?][A-Za-z-]*' | tr ', ' '\n\n' |
		grep -E -- '^--?[A-Za-z?]' | sort -u
}

# page_options PAGE: the options a man page documents (the tags of its .TP items)
page_options() {
	awk 'prev ~ /^\.TP/ { print } { prev = $0 }' "$1" | sed 's/\\-/-/g' |
		grep -oE -- '(^|[ "])--?[A-Za-z?][A-Za-z-]*' | tr -d ' "' | sort -u
}

test_version() {
	"$OFFCPU" --version >v.txt || fail "--version failed"
	cat v.txt
	grep -qE '^offcpu [0-9]+\.[0-9]+\.[0-9]+$' v.txt || fail "no offcpu version"
	lib=$(pkg-config --modversion libbpf 2>/dev/null || true)
	grep -qE '^libbpf v?[0-9]+\.[0-9]+' v.txt || fail "no libbpf version"
	[ -z "$lib" ] || grep -q "${lib%.*}" v.txt || fail "libbpf $lib not named"
}

# every option --help lists is in the man page, and the other way round
test_man_pages_agree_with_help() {
	local cmd bad=0
	for cmd in record report; do
		help_options "$cmd" >help.$cmd
		page_options "$MANDIR/offcpu-$cmd.1" >page.$cmd
		echo "$cmd: $(wc -l <help.$cmd) options in --help, $(wc -l <page.$cmd) in the page"
		comm -23 help.$cmd page.$cmd | sed "s/^/  $cmd: not in the man page: /" >>drift.txt
		comm -13 help.$cmd page.$cmd | sed "s/^/  $cmd: not in --help: /" >>drift.txt
	done
	[ ! -s drift.txt ] || { cat drift.txt; fail "the man pages and --help differ"; }
	sed 's/\\-/-/g' "$MANDIR/offcpu.1" | grep -q -- '--version' || fail "offcpu(1) does not document --version"
	for cmd in record report; do
		grep -q "^\.B $cmd\$" "$MANDIR/offcpu.1" || fail "offcpu(1) does not list $cmd"
	done
}

# each page renders without a warning, with the sections a perf user expects
test_man_pages_render() {
	local page sec
	command -v man >/dev/null || skip "man-db not installed"
	for page in "$MANDIR"/offcpu.1 "$MANDIR"/offcpu-record.1 "$MANDIR"/offcpu-report.1; do
		MANWIDTH=80 man --warnings -l "$page" >out.txt 2>warn.txt || fail "man -l $page failed"
		[ ! -s warn.txt ] || { cat warn.txt; fail "warnings rendering $page"; }
		for sec in NAME SYNOPSIS DESCRIPTION OPTIONS EXAMPLES FILES "EXIT STATUS" "SEE ALSO"; do
			grep -q "^$sec" out.txt || fail "$(basename "$page"): no $sec section"
		done
	done
	grep -q 'perf-record(1)' out.txt || fail "SEE ALSO does not name perf-record(1)"
}

# make install honours PREFIX and DESTDIR and puts everything in its FHS place
test_make_install_layout() {
	make -s -C "$ROOT" BUILD="$BUILD" install DESTDIR="$PWD/dest" PREFIX=/usr/local >/dev/null ||
		fail "make install failed"
	for f in bin/offcpu share/man/man1/offcpu.1 share/man/man1/offcpu-record.1 \
		share/man/man1/offcpu-report.1 share/bash-completion/completions/offcpu; do
		[ -f "dest/usr/local/$f" ] || fail "$f not installed under DESTDIR/PREFIX"
	done
	[ -x dest/usr/local/bin/offcpu ] || fail "binary not executable"
	MANWIDTH=80 man --warnings -l dest/usr/local/share/man/man1/offcpu-record.1 >/dev/null 2>w.txt
	[ ! -s w.txt ] || { cat w.txt; fail "installed page warns"; }
}

# completion of commands, options and their values
test_bash_completion() {
	cat >t.sh <<-EOF
		source "$ROOT/completion/offcpu.bash"
		PATH="$(dirname "$OFFCPU"):\$PATH"
		t() { COMP_WORDS=("\$@"); COMP_CWORD=\$((\${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _offcpu; echo "\${COMPREPLY[*]}"; }
		t offcpu re
		t offcpu record --st
		t offcpu record --stacks ""
		t offcpu record --transport ""
		t offcpu record --state ""
		t offcpu record --push-format ""
		t offcpu report --sort comm,t
		t offcpu report -i gt
		t offcpu record -o gt
		t offcpu report --fo
	EOF
	touch gt.data
	bash t.sh >got.txt 2>err.txt || { cat err.txt; fail "completion failed"; }
	cat got.txt
	printf '%s\n' "record report" "--stacks --state" "user kernel both" "ringbuf perfbuf" \
		"S D R T I S,D S,D,R all" "otlp pyroscope" "comm,tid" "gt.data" "gt.data" "--folded --force" >want.txt
	diff want.txt got.txt || fail "completions differ"
	complete -p offcpu 2>/dev/null || bash -c "source '$ROOT/completion/offcpu.bash'; complete -p offcpu" |
		grep -q _offcpu || fail "not registered for offcpu"
}

# dpkg-buildpackage builds the .deb from Debian's packages only; lintian finds
# no error; the installed tree runs and its man pages render
test_deb_package() {
	local src=$PWD/src/offcpu-0.1.0 deb units
	command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null ||
		skip "dpkg-dev and debhelper not installed (make deps)"
	command -v lintian >/dev/null || skip "lintian not installed (make deps)"
	mkdir -p "$src"
	# the sources as they are (what git tracks, and new files), not build output
	# (make BUILD=build-NAME: untracked directories of their own)
	(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard) | grep -zvE '^(dev|old)?build[^/]*/' |
		(cd "$ROOT" && xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh) |
		tar -C "$ROOT" --null -T - -cf - | tar -C "$src" -xf -
	rm -rf "$src/build" "$src/devbuild" "$src/oldbuild"
	# as a user would build it: not with the options of the make that runs the tests
	(cd "$src" && env -u DEB_BUILD_OPTIONS -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		dpkg-buildpackage -us -uc -b) >build.log 2>&1 || { tail -30 build.log; fail "dpkg-buildpackage failed"; }
	# the build ran the unit tests (debian/rules, override_dh_auto_test), and all passed
	grep -q '^debian/build/tests/unit$' build.log || fail "the package build ran no unit test"
	units=$(sed -nE 's/^([0-9]+) passed, 0 failed$/\1/p' build.log | tail -n 1)
	[ "${units:-0}" -gt 0 ] || { grep -E '^FAIL|passed' build.log; fail "no unit test passed there"; }
	echo "the package build ran $units unit tests"
	# and DEB_BUILD_OPTIONS=nocheck leaves them out
	(cd "$src" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL DEB_BUILD_OPTIONS="nocheck parallel=2" \
		make -s --no-print-directory -f debian/rules \
			override_dh_auto_test) >nocheck.log 2>&1 || { cat nocheck.log; fail "nocheck: the rule failed"; }
	[ "$(cat nocheck.log)" = "nocheck: the unit tests are not run" ] ||
		{ cat nocheck.log; fail "nocheck ran something"; }
	deb=$(ls src/offcpu_*_amd64.deb)
	[ -f "$deb" ] || fail "no .deb built"
	lintian "$deb" >lintian.txt 2>&1
	cat lintian.txt
	grep -q '^E:' lintian.txt && fail "lintian reports errors"
	dpkg -c "$deb" >contents.txt
	for f in usr/bin/offcpu usr/share/man/man1/offcpu.1.gz usr/share/man/man1/offcpu-record.1.gz \
		usr/share/man/man1/offcpu-report.1.gz usr/share/bash-completion/completions/offcpu; do
		grep -q " \./$f\$" contents.txt || fail "$f not in the package"
	done
	dpkg -x "$deb" root
	# the push service: installed, neither enabled nor started, its command one offcpu takes
	grep -q ' \./lib/systemd/system/offcpu-push\.service$' contents.txt || fail "no offcpu-push.service in the package"
	dpkg -e "$deb" ctl
	grep -qx /etc/default/offcpu-push ctl/conffiles || fail "/etc/default/offcpu-push is not a conffile"
	grep -q "deb-systemd-helper debian-installed 'offcpu-push.service'" ctl/postinst ||
		{ cat ctl/postinst; fail "the postinst would enable offcpu-push.service"; }
	! grep -q "deb-systemd-invoke.*start.*offcpu-push" ctl/postinst || fail "the postinst starts offcpu-push.service"
	grep -qx 'ExecStart=/usr/bin/offcpu record -a --push ${OFFCPU_PUSH_URL} $OFFCPU_PUSH_OPTIONS' \
		root/lib/systemd/system/offcpu-push.service || fail "ExecStart is not offcpu record -a --push"
	(. root/etc/default/offcpu-push && [ -z "$OFFCPU_PUSH_URL" ] &&
		root/usr/bin/offcpu record -a --push http://127.0.0.1:1 $OFFCPU_PUSH_OPTIONS --help >/dev/null &&
		{ root/usr/bin/offcpu record -a --push "" $OFFCPU_PUSH_OPTIONS 2>/dev/null; [ $? -eq 2 ]; }) ||
		fail "the service's default options are not taken, or no URL is not a usage error"
	root/usr/bin/offcpu --help >help.txt || fail "the packaged offcpu --help failed"
	grep -q record help.txt || fail "no commands in --help"
	root/usr/bin/offcpu --version || fail "--version failed"
	# the faults the tests inject are in the tested build and in no package
	strings "$ROOT/$BUILD/offcpu" | grep -q OFFCPU_FAULT_REFUSE || fail "the tested build has no test hooks"
	if strings root/usr/bin/offcpu | grep -E 'OFFCPU_(FAULT|LATE|DRAIN|TEST|UNWIND)' >hooks.txt; then
		cat hooks.txt
		fail "the packaged offcpu holds test hooks"
	fi
	for p in offcpu offcpu-record offcpu-report; do
		MANWIDTH=80 man --warnings -l "root/usr/share/man/man1/$p.1.gz" >/dev/null 2>w.txt || fail "man -l $p failed"
		[ ! -s w.txt ] || { cat w.txt; fail "$p.1 warns"; }
	done
	# the packaged pages agree with the packaged binary
	OFFCPU=$PWD/root/usr/bin/offcpu
	for cmd in record report; do
		help_options "$cmd" >h.$cmd
		zcat "root/usr/share/man/man1/offcpu-$cmd.1.gz" >p.$cmd.1
		page_options p.$cmd.1 >p.$cmd
		cmp -s h.$cmd p.$cmd || { diff h.$cmd p.$cmd; fail "packaged $cmd page and --help differ"; }
	done
}

# make demo installs what building and recording need and none of the tests'
# tools; make check all of them; with every package there, nothing is fetched
test_install_deps_sets() {
	local deps=$ROOT/scripts/install-deps.sh p missing=
	bash "$deps" --print >demo.txt || fail "install-deps.sh --print failed"
	bash "$deps" --print --check >all.txt || fail "install-deps.sh --print --check failed"
	echo "make demo: $(tr '\n' ' ' <demo.txt)"
	echo "make check adds: $(grep -vxF -f demo.txt all.txt | tr '\n' ' ')"
	for p in gcc make clang bpftool libbpf-dev libelf-dev libdw-dev linux-perf; do
		grep -qx "$p" demo.txt || fail "make demo would not install $p"
	done
	grep -E '^(chromium|qemu|golang|lintian)' demo.txt && fail "make demo would install the tests' tools"
	for p in chromium qemu-system-x86 golang-go lintian debhelper man-db python3 nodejs npm; do
		grep -qx "$p" all.txt || fail "make check would not install $p"
	done
	grep -vxF -f all.txt demo.txt && fail "make check would not install all of make demo's packages"
	[ -z "$(sort all.txt | uniq -d)" ] || fail "a package listed twice: $(sort all.txt | uniq -d)"
	bash "$deps" --bogus 2>/dev/null
	[ $? -eq 2 ] || fail "an unknown option does not exit 2"
	# idempotent: where every package is installed, apt-get is not even run
	# (npm counts as there when its command is: install-deps.sh takes it by command)
	while read -r p; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			{ [ "$p" = npm ] && command -v npm >/dev/null; } || missing+=" $p"
	done <all.txt
	[ -z "$missing" ] || skip "not installed here:$missing (make deps)"
	mkdir bin
	printf '#!/bin/sh\necho "apt-get $*" >>"%s/apt.log"\nexit 1\n' "$PWD" >bin/apt-get
	chmod +x bin/apt-get
	PATH=$PWD/bin:$PATH bash "$deps" --check </dev/null >out.txt 2>&1 ||
		{ cat out.txt; fail "install-deps.sh --check failed with every package installed"; }
	cat out.txt
	[ ! -e apt.log ] || { cat apt.log; fail "install-deps.sh ran apt-get with every package installed"; }
	grep -q "are installed" out.txt || fail "install-deps.sh does not say all is there"
}

# the README stays an entry point: short, the two commands, every document in doc/ named
test_readme_short() {
	local readme=$ROOT/README.md n f
	n=$(wc -l <"$readme")
	echo "README.md: $n lines"
	[ "$n" -le 200 ] || fail "README.md has $n lines, more than 200: move detail to doc/"
	grep -q '^sudo make demo ' "$readme" || fail "the README does not show sudo make demo"
	grep -q '^sudo make check ' "$readme" || fail "the README does not show sudo make check"
	for f in "$ROOT"/doc/*.md; do
		grep -qF "](doc/${f##*/})" "$readme" || fail "doc/${f##*/} is not linked from the README"
	done
}

# every relative link of the README and doc/*.md leads to a file of the tree,
# and a #fragment to a heading of that file (GitHub's anchors)
test_doc_links() {
	python3 - "$ROOT" <<-'PY' || fail "broken links"
		import os, re, sys
		root = os.path.realpath(sys.argv[1])
		def slugs(path):
		    out, seen, code = set(), {}, False
		    for line in open(path, encoding="utf-8"):
		        if line.startswith("```"):
		            code = not code
		        m = None if code else re.match(r"#{1,6} +(.*?)\s*$", line)
		        if m:
		            s = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
		            n = seen.get(s, 0)
		            seen[s] = n + 1
		            out.add(s if n == 0 else "%s-%d" % (s, n))
		    return out
		files = [os.path.join(root, "README.md")]
		files += sorted(os.path.join(root, "doc", f) for f in os.listdir(os.path.join(root, "doc"))
		                if f.endswith(".md"))
		bad = links = 0
		for path in files:
		    text = re.sub(r"```.*?```", "", open(path, encoding="utf-8").read(), flags=re.S)
		    text = re.sub(r"`[^`\n]*`(?!\])", "", text)
		    for target in re.findall(r"\]\(([^)\s]+)\)", text):
		        if re.match(r"[a-z]+:", target):
		            continue
		        links += 1
		        name, _, frag = target.partition("#")
		        dest = os.path.realpath(os.path.join(os.path.dirname(path), name)) if name else path
		        rel = os.path.relpath(path, root)
		        if not (dest == root or dest.startswith(root + os.sep)) or not os.path.exists(dest):
		            print("%s: %s: no such file in the tree" % (rel, target))
		            bad += 1
		        elif frag and (not dest.endswith(".md") or frag not in slugs(dest)):
		            print("%s: %s: no such heading" % (rel, target))
		            bad += 1
		print("%d relative links in %d files, %d broken" % (links, len(files), bad))
		sys.exit(1 if bad else 0)
	PY
}
