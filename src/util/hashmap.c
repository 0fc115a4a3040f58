// SPDX-License-Identifier: GPL-2.0
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "hashmap.h"

uint64_t hash_bytes(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a, then a final mix */
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h ? h : 1;
}

static struct hashmap_slot *probe(const struct hashmap *m, uint64_t h, const void *key, size_t len)
{
	size_t i = h & (m->cap - 1);

	for (;; i = (i + 1) & (m->cap - 1)) {
		struct hashmap_slot *s = &m->slots[i];

		if (!s->hash)
			return s;
		if (s->hash == h && s->key_len == len && !memcmp(s->key, key, len))
			return s;
	}
}

uint64_t *hashmap__find(const struct hashmap *m, const void *key, size_t len)
{
	struct hashmap_slot *s;

	if (!m->cap)
		return NULL;
	s = probe(m, hash_bytes(key, len), key, len);
	return s->hash ? &s->value : NULL;
}

static int grow(struct hashmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64, i;
	struct hashmap old = *m;

	m->slots = calloc(cap, sizeof(*m->slots));
	if (!m->slots) {
		*m = old;
		return -1;
	}
	m->cap = cap;
	for (i = 0; i < old.cap; i++)
		if (old.slots[i].hash)
			*probe(m, old.slots[i].hash, old.slots[i].key, old.slots[i].key_len) =
				old.slots[i];
	free(old.slots);
	return 0;
}

uint64_t *hashmap__upsert(struct hashmap *m, const void *key, size_t len, int *created)
{
	struct hashmap_slot *s;
	uint64_t h = hash_bytes(key, len);

	*created = 0;
	if ((m->len + 1) * 4 > m->cap * 3 && grow(m))
		return NULL;
	s = probe(m, h, key, len);
	if (s->hash)
		return &s->value;
	s->key = malloc(len ? len : 1);
	if (!s->key)
		return NULL;
	memcpy(s->key, key, len);
	s->key_len = len;
	s->hash = h;
	s->value = 0;
	m->len++;
	*created = 1;
	return &s->value;
}

bool hashmap__remove(struct hashmap *m, const void *key, size_t len)
{
	size_t mask = m->cap - 1, i, j, home;
	struct hashmap_slot *s;

	if (!m->cap)
		return false;
	s = probe(m, hash_bytes(key, len), key, len);
	if (!s->hash)
		return false;
	free(s->key);
	m->len--;
	/* linear probing: later slots of the run move back into the hole, where
	 * their home slot allows, so that no probe stops short of them */
	i = (size_t)(s - m->slots);
	for (j = i;;) {
		m->slots[i].hash = 0;
		for (;;) {
			j = (j + 1) & mask;
			if (!m->slots[j].hash)
				return true;
			home = m->slots[j].hash & mask;
			/* stays where it is when its home lies cyclically in (i, j] */
			if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
				continue;
			break;
		}
		m->slots[i] = m->slots[j];
		i = j;
	}
}

void hashmap__free(struct hashmap *m)
{
	size_t i;

	for (i = 0; i < m->cap; i++)
		if (m->slots[i].hash)
			free(m->slots[i].key);
	free(m->slots);
	m->slots = NULL;
	m->cap = m->len = 0;
}
