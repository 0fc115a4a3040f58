/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Protocol buffer encoding for report's outputs (pprof.c, perfetto.c) and
 * push's requests: a growing buffer, varints, length-delimited fields,
 * embedded messages, gzip.
 * The first allocation failure is kept in err and every later call does
 * nothing; the caller frees d.
 */
#ifndef OFFCPU_REPORT_PB_H
#define OFFCPU_REPORT_PB_H

#include <stddef.h>
#include <stdint.h>

struct pb {
	uint8_t *d;
	size_t len, cap;
	int err; /* 0, or -ENOMEM */
};

#define PB_VARINT_MAX 10 /* bytes of a 64-bit varint */

/* @v as a varint into @out; returns its length. */
size_t pb_varint_enc(uint8_t out[PB_VARINT_MAX], uint64_t v);

void pb_raw(struct pb *b, const void *p, size_t n);
void pb_varint(struct pb *b, uint64_t v);
/* A varint field, written even when 0 (a pid, a type). */
void pb_uint(struct pb *b, uint32_t field, uint64_t v);
/* A varint field, left out when 0 (proto3's default). */
void pb_uint_nz(struct pb *b, uint32_t field, uint64_t v);
void pb_fixed64(struct pb *b, uint32_t field, uint64_t v);
void pb_bytes(struct pb *b, uint32_t field, const void *p, size_t n);
/* A string, escaped as on a terminal (str_escape): protobuf readers refuse one
 * that is not UTF-8, and different strings stay different. */
void pb_str(struct pb *b, uint32_t field, const char *s);
/* Append @sub as embedded message @field (its error kept in @b) and empty it for reuse. */
void pb_msg(struct pb *b, uint32_t field, struct pb *sub);
/* Append @len bytes of @data, gzip-compressed (a gzip member, as pprof files are), to @out. 0 or -errno. */
int pb_gzip(const uint8_t *data, size_t len, struct pb *out);

#endif
