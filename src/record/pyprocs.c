// SPDX-License-Identifier: GPL-2.0
/* The Python processes' table (python_int.h): an entry per process, its names freed. */
#include <stdlib.h>
#include "python_int.h"
#include "../util/util.h"

/* Process @tgid's entry; made if new and @make (under the lock). NULL: none, or no memory. */
struct pyproc *proc_get(struct python *py, uint32_t tgid, bool make)
{
	uint64_t *v = hashmap__find(&py->procs, &tgid, sizeof(tgid));
	size_t i;
	int created;

	if (v)
		return &py->proc[*v - 1];
	if (!make)
		return NULL;
	for (i = 0; i < py->nr_proc && py->proc[i].used; i++)
		;
	if (i == py->nr_proc) {
		if (grow_array((void **)&py->proc, &py->cap_proc, py->nr_proc + 1, sizeof(*py->proc)))
			return NULL;
		py->nr_proc++;
	}
	v = hashmap__upsert(&py->procs, &tgid, sizeof(tgid), &created);
	if (!v)
		return NULL;
	py->proc[i] = (struct pyproc){ .tgid = tgid, .used = true };
	*v = i + 1;
	return &py->proc[i];
}

/* Free @pp's names (under the lock). */
void proc_drop_names(struct python *py, struct pyproc *pp)
{
	size_t i;

	for (i = 0; i < pp->cap_names; i++)
		free(pp->names[i].text);
	free(pp->names);
	for (i = 0; i < pp->cap_unames; i++)
		free(pp->unames[i].text);
	free(pp->unames);
	pp->unames = NULL;
	pp->cap_unames = 0;
	hashmap__free(&pp->uids);
	hashmap__free(&pp->stamps);
	pp->names = NULL;
	pp->cap_names = 0;
	py->bytes -= pp->bytes;
	pp->bytes = 0;
}
