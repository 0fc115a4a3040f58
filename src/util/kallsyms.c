// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kallsyms.h"

int kallsyms__foreach(const char *path, int (*fn)(const struct ksym_line *l, void *arg), void *arg)
{
	FILE *f = fopen(path ? path : "/proc/kallsyms", "re");
	char line[1024];
	int ret = 0;

	if (!f)
		return -errno;
	while (!ret && fgets(line, sizeof(line), f)) {
		struct ksym_line l = { 0 };
		char *end, *name, *mod;

		l.addr = strtoull(line, &end, 16);
		if (end == line || end[0] != ' ' || !end[1] || end[2] != ' ')
			continue;
		l.type = end[1];
		name = end + 3;
		end = name + strcspn(name, " \t\n");
		mod = *end == '\t' ? strchr(end + 1, '[') : NULL;
		*end = '\0';
		if (!*name)
			continue;
		l.name = name;
		if (mod) {
			mod++;
			mod[strcspn(mod, "]\n")] = '\0';
			l.module = mod;
		}
		ret = fn(&l, arg);
	}
	fclose(f);
	return ret;
}

int kernel_build_id(uint8_t *id, size_t cap)
{
	unsigned char buf[4096];
	int fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);
	ssize_t n;
	size_t off = 0;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0)
		return -errno;
	while (off + 12 <= (size_t)n) {
		uint32_t namesz, descsz, type;
		size_t name_off = off + 12, desc_off;

		memcpy(&namesz, buf + off, 4);
		memcpy(&descsz, buf + off + 4, 4);
		memcpy(&type, buf + off + 8, 4);
		desc_off = name_off + ((namesz + 3) & ~3u);
		if (namesz > 4096 || descsz > 4096 || desc_off + descsz > (size_t)n)
			break;
		if (type == 3 /* NT_GNU_BUILD_ID */ && namesz == 4 && !memcmp(buf + name_off, "GNU", 4)) {
			size_t len = descsz < cap ? descsz : cap;

			memcpy(id, buf + desc_off, len);
			return (int)len;
		}
		off = desc_off + ((descsz + 3) & ~3u);
	}
	return -ENOENT;
}
