// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
