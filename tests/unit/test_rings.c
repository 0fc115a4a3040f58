// SPDX-License-Identifier: GPL-2.0
/* Reading perf ring buffers: forward with wrap-around, and backward (flight recorder). No root. */
#include <stdlib.h>
#include "unit.h"
#include "record/rings.h"

#define PAGE 4096
#define SIZE 256

struct seen {
	int n;
	uint16_t sizes[8];
	uint8_t first[8], last[8];
};

static int collect(const struct perf_event_header *h, void *arg)
{
	struct seen *s = arg;
	const uint8_t *p = (const uint8_t *)h;

	if (s->n < 8) {
		s->sizes[s->n] = h->size;
		s->first[s->n] = p[8];
		s->last[s->n] = p[h->size - 1];
	}
	s->n++;
	return 0;
}

/* Lay a record of @size bytes at ring position @pos, payload bytes all @fill. */
static void put(uint8_t *data, uint64_t pos, uint16_t size, uint8_t fill)
{
	uint8_t rec[128];
	struct perf_event_header h = { PERF_RECORD_SAMPLE, 0, size };
	size_t i;

	memset(rec, fill, size);
	memcpy(rec, &h, sizeof(h));
	for (i = 0; i < size; i++)
		data[(pos + i) % SIZE] = rec[i];
}

static void test_forward_wrap(void)
{
	uint8_t *mem = calloc(1, PAGE + SIZE), *data = mem + PAGE;
	struct perf_event_mmap_page *pg = (void *)mem;
	struct perf_rings *r = perf_rings__wrap(mem, PAGE, SIZE, false);
	struct seen s = { 0 };

	CHECK(r != NULL);
	if (!r)
		return;
	/* the second record straddles the end of the data area, its header too */
	pg->data_tail = 1000 * SIZE + 200;
	put(data, pg->data_tail, 52, 0xa1);
	put(data, pg->data_tail + 52, 40, 0xb2);
	put(data, pg->data_tail + 92, 16, 0xc3);
	pg->data_head = pg->data_tail + 108;
	CHECK_EQ_U64(perf_rings__read(r, collect, &s), 3);
	CHECK(s.n == 3 && s.sizes[1] == 40 && s.first[1] == 0xb2 && s.last[1] == 0xb2);
	CHECK(s.first[2] == 0xc3 && s.sizes[2] == 16);
	CHECK_EQ_U64(pg->data_tail, pg->data_head);
	/* a record whose size runs past data_head: the ring is corrupt, reading stops */
	put(data, pg->data_head, 64, 0xd4);
	pg->data_head += 32;
	CHECK(perf_rings__read(r, collect, &s) < 0);
	perf_rings__free(r);
	free(mem);
}

static void test_backward(void)
{
	uint8_t *mem = calloc(1, PAGE + SIZE), *data = mem + PAGE;
	struct perf_event_mmap_page *pg = (void *)mem;
	struct perf_rings *r = perf_rings__wrap(mem, PAGE, SIZE, true);
	struct seen s = { 0 };
	uint64_t head = -(uint64_t)48; /* the kernel writes backward from 0 */

	CHECK(r != NULL);
	if (!r)
		return;
	/* newest first from data_head: 40 bytes at 208, 24 straddling the end, 16 at 16 */
	put(data, head, 40, 0x11);
	put(data, head + 40, 24, 0x22);
	put(data, head + 64, 16, 0x33);
	pg->data_head = head;
	CHECK_EQ_U64(perf_rings__snapshot(r, collect, &s), 3);
	CHECK(s.n == 3 && s.first[0] == 0x11 && s.sizes[1] == 24 && s.first[1] == 0x22 &&
	      s.last[1] == 0x22 && s.first[2] == 0x33);
	/* a full ring: records up to one ring size are read, not one byte past */
	memset(&s, 0, sizeof(s));
	for (uint64_t p = 0; p < SIZE; p += 32)
		put(data, head + p, 32, (uint8_t)p);
	CHECK_EQ_U64(perf_rings__snapshot(r, collect, &s), SIZE / 32);
	perf_rings__free(r);
	free(mem);
}

const struct unit_test rings_tests[] = {
	{ "rings: forward, wrapping records", test_forward_wrap },
	{ "rings: backward (flight recorder)", test_backward },
	{ 0 },
};
