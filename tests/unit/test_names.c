// SPDX-License-Identifier: GPL-2.0
/* Unit tests of what names runtime frames: the perf map text, address sets, V8's layout. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "unit.h"
#include "record/v8layout.h"
#include "util/pmtext.h"
#include "util/u64set.h"

static void test_u64set(void)
{
	struct u64set s = { 0 };
	uint64_t v, sum = 0;
	size_t i, n = 0;

	CHECK(!u64set__has(&s, 42));
	CHECK(u64set__add(&s, 0) == -EINVAL);
	CHECK(u64set__add(&s, 1) == -EINVAL);
	for (i = 2; i < 5002; i++)
		CHECK(u64set__add(&s, i * 4096 + 7) == 1);
	CHECK(u64set__add(&s, 2 * 4096 + 7) == 0);
	CHECK_EQ_U64(s.len, 5000);
	for (i = 2; i < 5002; i += 2)
		CHECK(u64set__remove(&s, i * 4096 + 7));
	CHECK(!u64set__remove(&s, 2 * 4096 + 7));
	CHECK_EQ_U64(s.len, 2500);
	CHECK(!u64set__has(&s, 4 * 4096 + 7));
	CHECK(u64set__has(&s, 3 * 4096 + 7));
	/* removed slots are reused, the set rebuilt when they pile up */
	for (i = 0; i < 100000; i++) {
		CHECK(u64set__add(&s, 1ULL << 40 | i) == 1);
		CHECK(u64set__remove(&s, 1ULL << 40 | i));
	}
	CHECK(s.cap <= 8192);
	for (i = 0; i < s.cap; i++)
		if (u64set__at(&s, i, &v)) {
			n++;
			sum += v;
		}
	CHECK_EQ_U64(n, 2500);
	CHECK(sum > 0);
	u64set__free(&s);
	CHECK(!u64set__has(&s, 3 * 4096 + 7));
	/* bounded: past @max an addition is refused and said (full) */
	s.max = 1000;
	for (i = 2; i < 1002; i++)
		CHECK(u64set__add(&s, i) == 1);
	CHECK(!s.full);
	CHECK(u64set__add(&s, 5) == 0);
	CHECK(!s.full);
	CHECK(u64set__add(&s, 1002) == 0);
	CHECK(s.full);
	CHECK(!u64set__has(&s, 1002));
	CHECK_EQ_U64(s.len, 1000);
	CHECK(u64set__bytes(&s) <= 16 * 1000 + 16 * 1024);
	u64set__free(&s);
	CHECK(!s.full);
}

static void test_pmtext(void)
{
	static const char text[] =
		"7f00 10 JS:*foo /a.js:1:2\n"
		"0x7f10 0x20 void Foo.bar(long)\n"
		"zz 10 not an entry\n"
		"7f40 0 size zero\n"
		"ffffffffffffff00 200 wraps\n"
		"7f50 10\n"
		"7f60 8 name with (parens) \r\n"
		"7f70 8 half a li";
	char path[] = "/tmp/offcpu-pmtext-XXXXXX";
	struct pmtext b = { 0 };
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	unlink(path);
	CHECK(write(fd, text, sizeof(text) - 1) == (ssize_t)sizeof(text) - 1);
	pmtext__read(fd, 0, 1 << 20, 1 << 20, &b, NULL);
	CHECK_EQ_U64(b.nr, 3);
	if (b.nr == 3) {
		CHECK_EQ_U64(b.e[0].start, 0x7f00);
		CHECK_EQ_U64(b.e[0].size, 0x10);
		CHECK_STR(b.names + b.e[0].name, "JS:*foo /a.js:1:2");
		CHECK_EQ_U64(b.e[1].start, 0x7f10);
		CHECK_STR(b.names + b.e[1].name, "void Foo.bar(long)");
		CHECK_STR(b.names + b.e[2].name, "name with (parens) ");
	}
	/* the partial last line is left for the next read */
	CHECK_EQ_U64(b.consumed, sizeof(text) - 1 - strlen("7f70 8 half a li"));
	CHECK(!b.over);
	pmtext__free(&b);
	pmtext__read(fd, 1 << 20, 1 << 20, 1 << 20, &b, NULL);
	CHECK(b.over);
	pmtext__free(&b);
	close(fd);
}

/* node 20's v8dbg_* values (checked against /usr/bin/node with nm -D) */
static void node20(int32_t *k, bool *have)
{
	static const int32_t v[V8K_NR] = {
		[V8K_FP_FUNCTION] = -16, [V8K_FP_CONTEXT] = -8, [V8K_FN_SHARED] = 24,
		[V8K_OBJ_MAP] = 0, [V8K_MAP_TYPE] = 12, [V8K_SFI_NAME] = 16, [V8K_SFI_SCRIPT] = 32,
		[V8K_SCRIPT_NAME] = 16, [V8K_STR_LEN] = 12, [V8K_STR_CHARS] = 16,
		[V8K_THIN_ACTUAL] = 16, [V8K_CONS_FIRST] = 16, [V8K_CONS_SECOND] = 24,
		[V8K_TYPE_SFI] = 262, [V8K_TYPE_SCOPE] = 261, [V8K_TYPE_SCRIPT] = 167,
		[V8K_FIRST_NONSTRING] = 128, [V8K_REPR_MASK] = 7, [V8K_REPR_SEQ] = 0,
		[V8K_REPR_THIN] = 5, [V8K_REPR_CONS] = 1, [V8K_ENC_MASK] = 8, [V8K_ENC_ONE] = 8,
		[V8K_SCOPE_FIRST] = 3, [V8K_SCOPE_NLOCALS] = 2, [V8K_TAGGED_SIZE] = 8,
		[V8K_SMI_SHIFT] = 31, [V8K_HEAP_TAG] = 1, [V8K_HEAP_TAG_MASK] = 3,
	};
	int i;

	for (i = 0; i < V8K_NR; i++) {
		k[i] = v[i];
		have[i] = i < V8K_NEEDED;
	}
	have[V8K_SCOPE_HEAPOBJ] = true;
}

static void test_v8layout(void)
{
	struct offcpu_v8_proc l;
	int32_t k[V8K_NR];
	bool have[V8K_NR];
	char why[160];

	node20(k, have);
	CHECK(v8layout__make(k, have, &l, why, sizeof(why)) == 0);
	CHECK_EQ_U64(l.state, OFFCPU_V8_ON);
	CHECK(l.fp_function == -16 && l.fp_context == -8);
	CHECK_EQ_U64(l.fn_shared, 24);
	CHECK_EQ_U64(l.scope_data, 8); /* a heap object of its own: after its map */
	CHECK_EQ_U64(l.type_scope, 261);
	CHECK_EQ_U64(l.repr_cons, 1);
	/* a ScopeInfo that is a FixedArray (V8 before 9.1): its slots after the length */
	have[V8K_SCOPE_HEAPOBJ] = false;
	have[V8K_FIXED_DATA] = true;
	k[V8K_FIXED_DATA] = 16;
	CHECK(v8layout__make(k, have, &l, why, sizeof(why)) == 0);
	CHECK_EQ_U64(l.scope_data, 16);
	/* what is missing or cannot be read is said */
	node20(k, have);
	have[V8K_SFI_NAME] = false;
	CHECK(v8layout__make(k, have, &l, why, sizeof(why)) == -1);
	CHECK(strstr(why, "name_or_scope_info") != NULL);
	node20(k, have);
	k[V8K_TAGGED_SIZE] = 4; /* pointer compression */
	CHECK(v8layout__make(k, have, &l, why, sizeof(why)) == -1);
	CHECK(strstr(why, "pointer compression") != NULL);
	node20(k, have);
	k[V8K_FN_SHARED] = 100000;
	CHECK(v8layout__make(k, have, &l, why, sizeof(why)) == -1);
	node20(k, have);
	k[V8K_SCOPE_FIRST] = 40;
	CHECK(v8layout__make(k, have, &l, why, sizeof(why)) == -1);
}

const struct unit_test names_tests[] = {
	{ "names: address sets, bounded or not", test_u64set },
	{ "names: perf map text", test_pmtext },
	{ "names: V8's layout from its v8dbg symbols", test_v8layout },
	{ 0 },
};
