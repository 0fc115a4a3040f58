// SPDX-License-Identifier: GPL-2.0
/* Protocol buffer encoding (pb.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "pb.h"
#include "../util/util.h"

size_t pb_varint_enc(uint8_t out[PB_VARINT_MAX], uint64_t v)
{
	size_t n = 0;

	do {
		out[n] = v & 0x7f;
		v >>= 7;
		if (v)
			out[n] |= 0x80;
		n++;
	} while (v);
	return n;
}

void pb_raw(struct pb *b, const void *p, size_t n)
{
	if (b->err)
		return;
	if (b->len + n > b->cap) {
		size_t c = b->cap ? b->cap : 256;
		uint8_t *nd;

		while (c < b->len + n)
			c *= 2;
		nd = realloc(b->d, c);
		if (!nd) {
			b->err = -ENOMEM;
			return;
		}
		b->d = nd;
		b->cap = c;
	}
	memcpy(b->d + b->len, p, n);
	b->len += n;
}

void pb_varint(struct pb *b, uint64_t v)
{
	uint8_t buf[PB_VARINT_MAX];

	pb_raw(b, buf, pb_varint_enc(buf, v));
}

void pb_uint(struct pb *b, uint32_t field, uint64_t v)
{
	pb_varint(b, (uint64_t)field << 3);
	pb_varint(b, v);
}

void pb_uint_nz(struct pb *b, uint32_t field, uint64_t v)
{
	if (v)
		pb_uint(b, field, v);
}

void pb_fixed64(struct pb *b, uint32_t field, uint64_t v)
{
	uint8_t le[8];
	int i;

	for (i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	pb_varint(b, ((uint64_t)field << 3) | 1);
	pb_raw(b, le, 8);
}

void pb_bytes(struct pb *b, uint32_t field, const void *p, size_t n)
{
	pb_varint(b, ((uint64_t)field << 3) | 2);
	pb_varint(b, n);
	pb_raw(b, p, n);
}

void pb_str(struct pb *b, uint32_t field, const char *s)
{
	char small[256], *e = small;
	size_t n = strlen(s), len = str_escape_n(small, sizeof(small), s, n);

	if (len >= sizeof(small)) {
		e = malloc(len + 1);
		if (!e) {
			b->err = -ENOMEM;
			return;
		}
		str_escape_n(e, len + 1, s, n);
	}
	pb_bytes(b, field, e, len);
	if (e != small)
		free(e);
}

void pb_msg(struct pb *b, uint32_t field, struct pb *sub)
{
	if (sub->err)
		b->err = sub->err;
	pb_bytes(b, field, sub->d, sub->len);
	sub->len = 0;
}

int pb_gzip(const uint8_t *data, size_t len, struct pb *out)
{
	z_stream z = { 0 };
	uint8_t buf[65536];
	int zr, err = 0;

	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = (uint8_t *)data;
	z.avail_in = (uInt)len;
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		zr = deflate(&z, Z_FINISH);
		if (zr == Z_STREAM_ERROR) {
			err = -EIO;
			break;
		}
		pb_raw(out, buf, sizeof(buf) - z.avail_out);
		err = out->err;
	} while (!err && zr != Z_STREAM_END);
	deflateEnd(&z);
	return err;
}
