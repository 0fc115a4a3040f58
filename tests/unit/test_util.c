// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include "unit.h"
#include <fcntl.h>
#include <unistd.h>
#include "util/kallsyms.h"
#include "util/procmaps.h"
#include "util/util.h"
#include "util/hashmap.h"
#include "util/ranges.h"
#include "util/intset.h"

static void test_int_list(void)
{
	int *v = NULL;
	size_t n = 0;

	CHECK(parse_int_list("3,1-2,2", &v, &n) == 0);
	CHECK_EQ_U64(n, 3);
	if (n == 3) {
		CHECK_EQ_U64(v[0], 1);
		CHECK_EQ_U64(v[1], 2);
		CHECK_EQ_U64(v[2], 3);
	}
	free(v);
	CHECK(parse_int_list("", &v, &n) != 0);
	CHECK(parse_int_list("1,", &v, &n) != 0);
	CHECK(parse_int_list("5-2", &v, &n) != 0);
	CHECK(parse_int_list("-1", &v, &n) != 0);
	CHECK(parse_int_list("1x", &v, &n) != 0);
	CHECK(parse_int_list("0-99999999", &v, &n) != 0);
}

static void test_duration(void)
{
	uint64_t ns;

	CHECK(parse_duration_ns("1.5", &ns) == 0 && ns == 1500000000ULL);
	CHECK(parse_duration_ns("200ms", &ns) == 0 && ns == 200000000ULL);
	CHECK(parse_duration_ns("2m", &ns) == 0 && ns == 120000000000ULL);
	CHECK(parse_duration_ns("10s", &ns) == 0 && ns == 10000000000ULL);
	CHECK(parse_duration_ns("-1", &ns) != 0);
	CHECK(parse_duration_ns("abc", &ns) != 0);
	CHECK(parse_duration_ns("3 weeks", &ns) != 0);
	CHECK(parse_duration_ns("1e30", &ns) != 0);
}

static void test_u64(void)
{
	uint64_t v;

	CHECK(parse_u64("42", &v) == 0 && v == 42);
	CHECK(parse_u64("", &v) != 0);
	CHECK(parse_u64("-3", &v) != 0);
	CHECK(parse_u64("99999999999999999999999", &v) != 0);
}

static void test_hashmap(void)
{
	struct hashmap m = { 0 };
	int created, i, bad = 0;

	for (i = 0; i < 5000; i++) {
		uint64_t *v = hashmap__upsert(&m, &i, sizeof(i), &created);

		if (!v || !created)
			bad++;
		else
			*v = (uint64_t)i * 3;
	}
	CHECK_EQ_U64(bad, 0);
	CHECK_EQ_U64(m.len, 5000);
	for (i = 0; i < 5000; i++) {
		uint64_t *v = hashmap__find(&m, &i, sizeof(i));

		if (!v || *v != (uint64_t)i * 3)
			bad++;
	}
	CHECK_EQ_U64(bad, 0);
	i = 7;
	CHECK(hashmap__upsert(&m, &i, sizeof(i), &created) && !created);
	i = 5001;
	CHECK(hashmap__find(&m, &i, sizeof(i)) == NULL);
	/* every other key removed: the rest still found, wherever their runs were */
	for (i = 0; i < 5000; i += 2)
		bad += !hashmap__remove(&m, &i, sizeof(i));
	CHECK_EQ_U64(bad, 0);
	CHECK_EQ_U64(m.len, 2500);
	CHECK(!hashmap__remove(&m, &(int){ 0 }, sizeof(int)));
	for (i = 0; i < 5000; i++) {
		uint64_t *v = hashmap__find(&m, &i, sizeof(i));

		bad += i % 2 ? !v || *v != (uint64_t)i * 3 : v != NULL;
	}
	CHECK_EQ_U64(bad, 0);
	for (i = 10000; i < 12500; i++) /* the holes are used again */
		bad += !hashmap__upsert(&m, &i, sizeof(i), &created) || !created;
	for (i = 1; i < 5000; i += 2)
		bad += !hashmap__find(&m, &i, sizeof(i));
	CHECK_EQ_U64(bad, 0);
	CHECK_EQ_U64(m.len, 5000);
	hashmap__free(&m);
}

/* Ranges added in a scrambled order: each lookup finds the latest range holding the address. */
static void test_ranges(void)
{
	struct rangeset s = { 0 };
	uint64_t start[3000], len[3000];
	uint32_t v;
	int i, j, bad = 0;

	for (i = 0; i < 3000; i++) {
		/* side by side, and every 7th over an earlier one (code compiled again) */
		uint32_t k = (uint32_t)(i * 7919) % 3000;

		start[i] = 0x10000 + (uint64_t)(i % 7 ? k : (k / 2)) * 0x40;
		len[i] = i % 7 ? 0x40 : 0x20;
		CHECK(rangeset__add(&s, start[i], len[i], (uint32_t)i) == 0);
	}
	CHECK_EQ_U64(rangeset__len(&s), 3000);
	CHECK(s.nr_runs <= 13); /* merged as they grew */
	for (j = 0; j < 3000 * 2; j++) {
		uint64_t addr = 0x10000 + (uint64_t)j * 0x20 + 3;
		int want = -1;

		for (i = 0; i < 3000; i++)
			if (addr >= start[i] && addr - start[i] < len[i])
				want = i;
		if (rangeset__find(&s, addr, &v) ? (int)v != want : want >= 0)
			bad++;
	}
	CHECK_EQ_U64(bad, 0);
	CHECK(!rangeset__find(&s, 0x100, &v));
	CHECK(rangeset__add(&s, 5, 0, 1) == -EINVAL);
	CHECK(rangeset__add(&s, UINT64_MAX - 1, 4, 1) == -EINVAL);
	rangeset__free(&s);
	CHECK(!rangeset__find(&s, 0x10000, &v));
}

static void test_intset(void)
{
	struct intset s = { 0 };
	int i, bad = 0;

	for (i = 0; i < 1000; i += 2)
		intset__add(&s, i);
	for (i = 0; i < 1000; i++)
		if (intset__has(&s, i) != !(i & 1))
			bad++;
	CHECK_EQ_U64(bad, 0);
	CHECK_EQ_U64(s.len, 500);
	CHECK(intset__add(&s, 4) == 0);
	CHECK(intset__add(&s, -1) < 0);
	intset__free(&s);
}


static void test_procmaps(void)
{
	struct procmaps pm = { 0 };
	const struct addrspace *as;
	const struct vmap *m;

	/* an executable, then a library, then a re-mmap over the middle of the first */
	CHECK(procmaps__map(&pm, 10, 0x1000, 0x3000, 0, 1) == 0);
	CHECK(procmaps__map(&pm, 10, 0x8000, 0x1000, 0x2000, 2) == 0);
	CHECK(procmaps__map(&pm, 10, 0x2000, 0x1000, 0x5000, 3) == 0);
	as = procmaps__get(&pm, 10);
	CHECK(as && as->nr == 4);
	m = addrspace__find(as, 0x1fff);
	CHECK(m && m->obj == 1 && m->pgoff == 0);
	m = addrspace__find(as, 0x2000);
	CHECK(m && m->obj == 3 && m->pgoff == 0x5000);
	m = addrspace__find(as, 0x3800); /* the right part keeps its file offset */
	CHECK(m && m->obj == 1 && m->start == 0x3000 && m->pgoff == 0x2000);
	CHECK(addrspace__find(as, 0x4000) == NULL);
	CHECK(addrspace__find(as, 0xfff) == NULL);
	m = addrspace__find(as, 0x8fff);
	CHECK(m && m->obj == 2);
	/* a fork copies; the child's exec then replaces what it overlaps */
	CHECK(procmaps__fork(&pm, 10, 11) == 0);
	CHECK(procmaps__map(&pm, 11, 0x0, 0x10000, 0, 4) == 0);
	m = addrspace__find(procmaps__get(&pm, 11), 0x2000);
	CHECK(m && m->obj == 4);
	m = addrspace__find(procmaps__get(&pm, 10), 0x2000);
	CHECK(m && m->obj == 3);
	CHECK(procmaps__get(&pm, 12) == NULL);
	CHECK(addrspace__find(NULL, 0x2000) == NULL);
	/* a generation changes with every change */
	{
		uint64_t g = procmaps__get(&pm, 10)->gen;

		CHECK(procmaps__map(&pm, 10, 0x20000, 0x1000, 0, 5) == 0);
		CHECK(procmaps__get(&pm, 10)->gen != g);
	}
	procmaps__free(&pm);
}

static void test_search_and_grow(void)
{
	struct {
		uint64_t start;
	} a[] = { { 10 }, { 20 }, { 20 }, { 30 } };
	int *v = NULL;
	size_t cap = 0, i;

	CHECK_EQ_U64(last_at_or_below(a, 4, start, 5), SIZE_MAX);
	CHECK_EQ_U64(last_at_or_below(a, 4, start, 10), 0);
	CHECK_EQ_U64(last_at_or_below(a, 4, start, 25), 2);
	CHECK_EQ_U64(last_at_or_below(a, 4, start, 99), 3);
	CHECK_EQ_U64(last_at_or_below(a, 0, start, 99), SIZE_MAX);
	for (i = 0; i < 1000; i++) {
		CHECK(grow_array((void **)&v, &cap, i + 1, sizeof(*v)) == 0);
		v[i] = (int)i;
	}
	CHECK(cap >= 1000 && v[999] == 999);
	CHECK(grow_array((void **)&v, &cap, SIZE_MAX / 2, sizeof(*v)) == -ENOMEM);
	CHECK(v[500] == 500);
	free(v);
}

struct kseen {
	int n, modules;
	uint64_t text;
	char last[64];
};

static int kseen(const struct ksym_line *l, void *arg)
{
	struct kseen *k = arg;

	k->n++;
	if (l->module)
		k->modules += !strcmp(l->module, "ext4");
	if (!strcmp(l->name, "_text"))
		k->text = l->addr;
	snprintf(k->last, sizeof(k->last), "%c %s", l->type, l->name);
	return !strcmp(l->name, "stop_here") ? 7 : 0;
}

static void test_kallsyms(void)
{
	char path[] = "/tmp/offcpu-kallsyms.XXXXXX";
	int fd = mkstemp(path);
	static const char text[] = "ffffffff81000000 T _text\n"
				   "ffffffff81000100 t bad line\n"
				   "garbage\n"
				   "ffffffffc0000000 t ext4_fill_super\t[ext4]\n"
				   "ffffffffc0000100 T ext4_iget\t[ext4]\n"
				   "0000000000000000 D some_data\n";
	struct kseen k = { 0 };

	CHECK(fd >= 0 && write(fd, text, sizeof(text) - 1) == (ssize_t)sizeof(text) - 1);
	close(fd);
	CHECK(kallsyms__foreach(path, kseen, &k) == 0);
	CHECK_EQ_U64(k.n, 5); /* "garbage" is skipped; "bad line" keeps its first word */
	CHECK_EQ_U64(k.modules, 2);
	CHECK_EQ_U64(k.text, 0xffffffff81000000ULL);
	CHECK_STR(k.last, "D some_data");
	fd = open(path, O_WRONLY | O_APPEND);
	CHECK(fd >= 0 && write(fd, "1 t stop_here\n2 t after\n", 24) == 24);
	close(fd);
	memset(&k, 0, sizeof(k));
	CHECK(kallsyms__foreach(path, kseen, &k) == 7);
	CHECK_STR(k.last, "t stop_here");
	unlink(path);
	CHECK(kallsyms__foreach("/nonexistent/kallsyms", kseen, &k) == -ENOENT);
}

/* str_escape() of @s, whole */
static const char *esc(const char *s)
{
	static char buf[512];

	str_escape(buf, sizeof(buf), s);
	return buf;
}

static void test_escape(void)
{
	char small[8], *dup;
	FILE *f;
	char *mem = NULL;
	size_t memlen = 0;
	int c;

	/* what a hostile process name (prctl(PR_SET_NAME), 15 bytes) does to a terminal */
	CHECK_STR(esc("\x1b[2J\x1b[H\nroot"), "\\x1b[2J\\x1b[H\\nroot");
	CHECK_STR(esc("a\tb\rc\\d"), "a\\tb\\rc\\\\d");
	CHECK_STR(esc("\x01\x1f\x7f"), "\\x01\\x1f\\x7f");
	/* every byte below 0x20, and DEL, is escaped; every printable one is kept */
	for (c = 1; c < 0x80; c++) {
		char one[2] = { (char)c, 0 };
		const char *e = esc(one);

		if (c < 0x20 || c == 0x7f || c == '\\')
			CHECK(e[0] == '\\' && strlen(e) >= 2);
		else
			CHECK(e[0] == c && !e[1]);
	}
	CHECK_STR(esc(""), "");
	CHECK_EQ_U64(str_escape(NULL, 0, ""), 0);
	/* exactly TASK_COMM_LEN - 1 = 15 bytes, all of them ESC */
	CHECK_STR(esc("\x1b\x1b\x1b\x1b\x1b\x1b\x1b\x1b\x1b\x1b\x1b\x1b\x1b\x1b\x1b"),
		  "\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b");
	CHECK_EQ_U64(str_escape(NULL, 0, "fifteen-bytes-x"), 15);
	/* valid UTF-8 stays; bytes that are not UTF-8 are escaped one by one */
	CHECK_STR(esc("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x94\xa5"),
		  "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x94\xa5");
	CHECK_STR(esc("\xff\x9b[2J"), "\\xff\\x9b[2J");
	CHECK_STR(esc("\xc3"), "\\xc3"); /* cut short */
	CHECK_STR(esc("\xc0\xaf"), "\\xc0\\xaf"); /* overlong '/' */
	CHECK_STR(esc("\xe0\x80\xaf"), "\\xe0\\x80\\xaf"); /* overlong, 3 bytes */
	CHECK_STR(esc("\xed\xa0\x80"), "\\xed\\xa0\\x80"); /* a surrogate */
	CHECK_STR(esc("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80"); /* past U+10FFFF */
	/* C1 controls (U+009B is CSI to xterm) and bidi overrides as code points */
	CHECK_STR(esc("\xc2\x9b" "2J"), "\\u009b2J");
	CHECK_STR(esc("a\xe2\x80\xae" "b"), "a\\u202eb");
	CHECK_STR(esc("\xe2\x81\xa6x\xe2\x80\xa8"), "\\u2066x\\u2028");
	CHECK_STR(esc("\xef\xbf\xbe\xef\xbf\xbd"), "\\ufffe\xef\xbf\xbd"); /* U+FFFD stays */
	/* different names, different texts: a backslash is escaped too */
	dup = str_escape_dup("\\x1b");
	CHECK(dup && strcmp(dup, esc("\x1b")));
	free(dup);
	/* a short buffer: the length needed, and never half a character */
	CHECK_EQ_U64(str_escape(small, sizeof(small), "ab\x1b" "cd"), 8);
	CHECK_STR(small, "ab\\x1bc"); /* 7 bytes and the terminator; "d" does not fit */
	CHECK_EQ_U64(str_escape(small, sizeof(small), "abcdef\xc3\xa9"), 8);
	CHECK_STR(small, "abcdef");
	CHECK_EQ_U64(str_escape_n(small, sizeof(small), "a\nb", 2), 3);
	CHECK_STR(small, "a\\n");
	CHECK_STR(esc("ab\x1b" "cd"), "ab\\x1bcd");
	dup = str_escape_dup("x\ny");
	CHECK_STR(dup, "x\\ny");
	free(dup);
	/* padding counts terminal columns: escapes by their text, wide characters as two */
	f = open_memstream(&mem, &memlen);
	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_EQ_U64(fput_escaped(f, "\x1b", 6), 6);
	CHECK_EQ_U64(fput_escaped(f, "\xc3\xa9", 3), 3);
	CHECK_EQ_U64(fput_escaped(f, "\xe6\x97\xa5", 3), 3);
	CHECK_EQ_U64(fput_escaped(f, "e\xcc\x81", 2), 2); /* a combining accent */
	CHECK_EQ_U64(fput_escaped(f, "longer than", 4), 11);
	CHECK_EQ_U64(fput_escaped(f, "", 0), 0);
	fclose(f);
	CHECK_STR(mem, "\\x1b  \xc3\xa9  \xe6\x97\xa5 e\xcc\x81 longer than");
	free(mem);
}

/* pr_err() and friends: one line, whatever the message embeds */
static void test_log_escapes(void)
{
	char path[] = "/tmp/offcpu-log.XXXXXX", buf[512] = "";
	int fd = mkstemp(path), saved = dup(2);
	ssize_t n;

	CHECK(fd >= 0 && saved >= 0);
	if (fd < 0 || saved < 0)
		return;
	fflush(stderr);
	dup2(fd, 2);
	pr_err("cannot read %s: %s", "/tmp/\x1b[2J\nforged", "Bad");
	pr_warn("ends with its own newline\n");
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	unlink(path);
	CHECK(n > 0);
	CHECK_STR(buf, "offcpu: error: cannot read /tmp/\\x1b[2J\\nforged: Bad\n"
		       "offcpu: warning: ends with its own newline\n");
}

const struct unit_test util_tests[] = {
	{ "util: escaping names for a terminal", test_escape },
	{ "util: log messages escaped", test_log_escapes },
	{ "util: int lists", test_int_list },
	{ "util: durations", test_duration },
	{ "util: u64", test_u64 },
	{ "util: hashmap", test_hashmap },
	{ "util: ranges, the latest added wins", test_ranges },
	{ "util: intset", test_intset },
	{ "util: procmaps, the map model", test_procmaps },
	{ "util: last_at_or_below, grow_array", test_search_and_grow },
	{ "util: kallsyms lines", test_kallsyms },
	{ 0 },
};
