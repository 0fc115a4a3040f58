// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>
#include "unit.h"
#include "util/util.h"
#include "util/hashmap.h"
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
	hashmap__free(&m);
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

const struct unit_test util_tests[] = {
	{ "util: int lists", test_int_list },
	{ "util: durations", test_duration },
	{ "util: u64", test_u64 },
	{ "util: hashmap", test_hashmap },
	{ "util: intset", test_intset },
	{ 0 },
};
