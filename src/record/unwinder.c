// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/auxv.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "tablemem.h"
#include "unwinder.h"
#include "../util/objread.h"
#include "../unwind/oracle.h"
#include "../unwind/tables.h"
#include "../util/hashmap.h"
#include "../util/procmaps.h"
#include "../util/util.h"
#include "../util/worker.h"

/* a process is loaded again at most this often, however often it is asked
 * (but at once after an exec, which took its mappings away) */
#define RELOAD_NS (100 * 1000000ULL)
#define PRUNE_NS (2000 * 1000000ULL)

/*
 * What one object may cost (struct unwind_budget): the largest Debian
 * objects have 700k rows (libLLVM), 400 distinct rules (redis-server) and
 * 5 MB of .eh_frame, and build in tens of milliseconds.
 */
#define BUDGET_RULES 2048
#define BUDGET_BYTES (64ULL << 20)
#define BUDGET_NS (3000 * 1000000ULL)

/* What identifies an object's file: the same file in every process. */
struct obj_key {
	uint64_t dev, ino, size, mtime_ns;
};

/* The objects a process's published mappings name: it holds them. */
struct hold {
	uint32_t tgid;
	uint32_t nr;
	uint32_t *ids;
};

/* A mapping whose object is being built. */
struct pending {
	size_t map; /* its index in the process's mappings */
	uint64_t pgoff;
	char range[64];
	char name[256];
};

struct unwinder {
	struct collector_unwind_maps m;
	pthread_mutex_t lock;
	pthread_t thread;
	bool running;
	volatile int stop;
	struct tablemem *tm; /* the kernel's table memory: objects, rows, rules */
	struct hashmap objs; /* obj_key -> generation << 32 | object id (0: no table) */
	uint32_t vdso; /* the vDSO's object, 0 until built */
	bool vdso_tried;
	struct hashmap last; /* tgid -> when its last load began */
	struct hashmap held; /* tgid -> index into holds: the objects its mappings name */
	struct hold *holds;
	size_t nr_holds, cap_holds;
	struct offcpu_unw_proc *pv; /* scratch value */
	struct pending *pend; /* OFFCPU_UNW_MAPS of them */
	struct unwinder_stats st;
	struct ring_buffer *wake; /* new requests (and --verify-stacks' walks) */
	int epfd, stopfd; /* the thread sleeps on the requests and on its stop */
	bool verify;
	struct unwind_oracle *oracle;
	const volatile int *cancel; /* the recording's end */
	struct unwind_budget budget;
	unsigned rules_warned;
	bool abandoned; /* its thread did not stop: never freed */
	void (*on_jit)(void *arg, int tgid); /* a process with JIT code was loaded */
	void *jit_arg;
	void (*on_load)(void *arg, int tgid); /* a process was loaded */
	void *load_arg;
};

static bool cancelled(void *arg)
{
	struct unwinder *u = arg;

	return u->stop || (u->cancel && *u->cancel);
}

static int on_verify(void *ctx, void *data, size_t size);

static int on_wake(void *ctx, void *data, size_t size)
{
	(void)ctx, (void)data, (void)size;
	return 0; /* the request itself is in unw_req */
}

struct unwinder *unwinder__new(const struct collector_unwind_maps *m, bool verify,
			       const volatile int *cancel, char *msg, size_t len)
{
	struct unwinder *u = calloc(1, sizeof(*u));

	if (u)
		u->epfd = u->stopfd = -1;
	if (!u || !(u->tm = tablemem__new(m)) || !(u->pv = malloc(sizeof(*u->pv))) ||
	    !(u->pend = calloc(OFFCPU_UNW_MAPS, sizeof(*u->pend)))) {
		snprintf(msg, len, "out of memory");
		unwinder__free(u);
		return NULL;
	}
	u->m = *m;
	u->cancel = cancel;
	/* no object takes more than half the rows: the others keep room */
	u->budget = (struct unwind_budget){ .max_rows = m->nr_rows / 2, .max_rules = BUDGET_RULES,
					    .max_bytes = BUDGET_BYTES, .max_ns = BUDGET_NS,
					    .cancel = cancelled, .arg = u };
	u->wake = ring_buffer__new(m->wake_fd, on_wake, u, NULL);
	if (!u->wake) {
		snprintf(msg, len, "cannot read the table loader's requests: %s", strerror(errno));
		unwinder__free(u);
		return NULL;
	}
	if (verify) {
		u->verify = true;
		u->oracle = unwind_oracle__new();
		if (!u->oracle || ring_buffer__add(u->wake, m->verify_fd, on_verify, u)) {
			snprintf(msg, len, "cannot read the walks to verify: %s", strerror(errno));
			unwinder__free(u);
			return NULL;
		}
	}
	u->epfd = epoll_create1(EPOLL_CLOEXEC);
	u->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (u->epfd < 0 || u->stopfd < 0 ||
	    epoll_ctl(u->epfd, EPOLL_CTL_ADD, u->stopfd,
		      &(struct epoll_event){ .events = EPOLLIN }) ||
	    epoll_ctl(u->epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(u->wake),
		      &(struct epoll_event){ .events = EPOLLIN })) {
		snprintf(msg, len, "cannot wait for the table loader's requests: %s", strerror(errno));
		unwinder__free(u);
		return NULL;
	}
	pthread_mutex_init(&u->lock, NULL);
	return u;
}

static size_t release_dead(struct unwinder *u);

void unwinder__on_jit(struct unwinder *u, void (*fn)(void *arg, int tgid), void *arg)
{
	u->on_jit = fn;
	u->jit_arg = arg;
}

void unwinder__on_load(struct unwinder *u, void (*fn)(void *arg, int tgid), void *arg)
{
	u->on_load = fn;
	u->load_arg = arg;
}

/* One more object without a table, the first few named with the reason */
static void no_table(struct unwinder *u, const char *name, const char *why)
{
	if (u->st.no_table < UNWINDER_NAMED)
		snprintf(u->st.no_table_first[u->st.no_table], sizeof(u->st.no_table_first[0]),
			 "%.100s: %.56s", name, why);
	u->st.no_table++;
}

/*
 * A built table into the kernel's memory (tablemem.c): its object id, or 0
 * (frame pointers there) with the reason counted and said with -v.
 */
static uint32_t publish(struct unwinder *u, struct unwind_table *t, const char *name, uint32_t uid)
{
	int why;
	uint32_t id = tablemem__add(u->tm, t, uid, &why);

	/* the memory is full: processes that exited since the last prune let
	 * go of their objects now, and what they held can be taken back */
	if (!id && (why == -ENOSPC || why == -EMFILE) && release_dead(u))
		id = tablemem__add(u->tm, t, uid, &why);

	if (id) {
		u->st.objects++;
		return id;
	}
	no_table(u, name, why == -ENOSPC || why == -EMFILE ? "the table memory is full (--unwind-mem)" :
			  why == -EDQUOT ? "its owner's files hold their share of the table memory" :
			  why == -ENFILE ? "the rule array is full" : strerror(-why));
	u->st.mem_full += why == -ENOSPC || why == -EMFILE;
	if (why == -ENOSPC || why == -EMFILE)
		pr_info("no unwind table for %s: its %zu rows do not fit (--unwind-mem), even with "
			"what no process uses taken back", name, t->nr);
	else if (why == -EDQUOT)
		pr_info("no unwind table for %s: the files of user %u hold their share of the table "
			"memory", name, uid);
	else if (why == -ENFILE && !u->rules_warned++)
		pr_warn("the unwind rule array is full (%u rules): %s and the objects after it get "
			"no table", u->m.nr_rules, name);
	return 0;
}

/*
 * The object of the file mapped at /proc/@tgid/map_files/@range, built once;
 * OFFCPU_UNW_OBJ_PENDING when it is not built yet and @build is false.
 */
static uint32_t file_object(struct unwinder *u, int tgid, const char *range, const char *name,
			    bool build)
{
	struct unwind_table t;
	struct obj_key k = { 0 };
	struct stat sb;
	char path[96], err[256];
	uint64_t *v, t0;
	uint32_t id = 0;
	int created, e;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%s", tgid, range);
	e = objread_stat(path, &sb);
	if (e) {
		if (e != -ENOENT && e != -ESRCH)
			pr_info("no unwind table for %s: %s", name, objread_why(e));
		return 0;
	}
	k = (struct obj_key){ sb.st_dev, sb.st_ino, (uint64_t)sb.st_size,
			      (uint64_t)sb.st_mtim.tv_sec * 1000000000ULL + (uint64_t)sb.st_mtim.tv_nsec };
	v = hashmap__find(&u->objs, &k, sizeof(k));
	/* built before, and still loaded (not taken back since) */
	if (v && (!(uint32_t)*v || tablemem__alive(u->tm, (uint32_t)*v, (uint32_t)(*v >> 32))))
		return (uint32_t)*v;
	if (!build)
		return OFFCPU_UNW_OBJ_PENDING;
	if (sb.st_uid && tablemem__owner_full(u->tm, (uint32_t)sb.st_uid)) {
		/* not even read: that user's files hold their share already */
		no_table(u, name, "its owner's files hold their share of the table memory");
		goto remember;
	}
	t0 = now_ns();
	e = unwind_table__build(&t, path, &u->budget, err, sizeof(err));
	u->st.build_ns += now_ns() - t0;
	if (e == -ECANCELED || e == -EAGAIN || e == -EWOULDBLOCK)
		return 0; /* the recording is ending, or refused for now: not remembered as failed */
	if (e) {
		/* the message names /proc/PID/map_files/...: say which object that is */
		pr_info("no unwind table for %s (%s)", name, err);
		/* the message begins with the /proc path: the reason after it */
		no_table(u, name, strchr(err, ' ') ? strchr(err, ' ') + 1 : err);
		if (e == -E2BIG || e == -ETIME) {
			if (!u->st.over_budget++)
				snprintf(u->st.first_over, sizeof(u->st.first_over), "%.120s: %.120s", name,
					 strchr(err, ' ') ? strchr(err, ' ') + 1 : err);
		} else if (e == -EIO) {
			u->st.unreadable++;
		}
	} else {
		id = publish(u, &t, name, (uint32_t)sb.st_uid);
		unwind_table__free(&t);
	}
remember:
	v = hashmap__upsert(&u->objs, &k, sizeof(k), &created);
	if (v)
		*v = (uint64_t)tablemem__gen(u->tm, id) << 32 | id;
	return id;
}

/* The vDSO's object, from this process's own vDSO: the kernel's, the same in every process. */
static uint32_t vdso_object(struct unwinder *u)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	unsigned long long start, end;
	struct unwind_table t;
	char line[512], err[256];
	size_t size = 0;
	FILE *f;

	if (u->vdso_tried)
		return u->vdso;
	u->vdso_tried = true;
	f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &start, &end) == 2 &&
		    start == base)
			size = (size_t)(end - start);
	if (f)
		fclose(f);
	if (!base || !size)
		return 0;
	if (unwind_table__build_mem(&t, (const void *)base, size, "[vdso]", &u->budget, err,
				    sizeof(err))) {
		pr_info("no unwind table for [vdso]: %s", err);
		return 0;
	}
	u->vdso = publish(u, &t, "[vdso]", 0);
	unwind_table__free(&t);
	tablemem__get(u->tm, u->vdso); /* held for the whole recording */
	return u->vdso;
}

/* The mapping's object and bias, or object 0 where there is no table to use. */
static void set_object(struct unwinder *u, struct offcpu_unw_map *m, uint32_t id, uint64_t pgoff)
{
	const struct unwind_table *seg;
	uint64_t bias = 0;

	m->obj = id;
	m->bias = 0;
	if (!id || id == OFFCPU_UNW_OBJ_PENDING || id == OFFCPU_UNW_OBJ_JIT)
		return;
	/* no segment for the mapping: the walk goes on by frame pointers */
	seg = tablemem__segments(u->tm, id);
	if (!seg || unwind_table__bias(seg, m->start, pgoff, &bias))
		m->obj = 0;
	m->bias = bias;
}

/*
 * The objects process @tgid's mappings name now (@pv, published): held
 * before what it held is let go, so an object both name stays.
 */
static void hold_objects(struct unwinder *u, uint32_t tgid, const struct offcpu_unw_proc *pv)
{
	uint32_t *ids = malloc((pv->nr ? pv->nr : 1) * sizeof(*ids)), n = 0, i;
	uint64_t *v;
	struct hold *h;
	int created;

	if (!ids)
		return; /* held by none: taken back sooner, rebuilt if needed */
	for (i = 0; i < pv->nr; i++)
		if (pv->maps[i].obj && pv->maps[i].obj != OFFCPU_UNW_OBJ_PENDING &&
		    pv->maps[i].obj != OFFCPU_UNW_OBJ_JIT) {
			ids[n++] = pv->maps[i].obj;
			tablemem__get(u->tm, pv->maps[i].obj);
		}
	v = hashmap__upsert(&u->held, &tgid, sizeof(tgid), &created);
	if (!v || (created && grow_array((void **)&u->holds, &u->cap_holds, u->nr_holds + 1,
					 sizeof(*u->holds)))) {
		for (i = 0; i < n; i++)
			tablemem__put(u->tm, ids[i]);
		free(ids);
		return;
	}
	if (created) {
		*v = u->nr_holds;
		u->holds[u->nr_holds++] = (struct hold){ .tgid = tgid };
	}
	h = &u->holds[*v];
	for (i = 0; i < h->nr; i++)
		tablemem__put(u->tm, h->ids[i]);
	free(h->ids);
	h->ids = ids;
	h->nr = n;
}

/* Process @tgid is gone: what it held is let go. */
static void release(struct unwinder *u, uint32_t tgid)
{
	uint64_t *v = hashmap__find(&u->held, &tgid, sizeof(tgid));
	struct hold *h;
	uint32_t i;

	if (!v)
		return;
	h = &u->holds[*v];
	for (i = 0; i < h->nr; i++)
		tablemem__put(u->tm, h->ids[i]);
	free(h->ids);
	h->ids = NULL;
	h->nr = 0;
}

/* Let go of what processes that exited held (under the lock); how many there were. */
static size_t release_dead(struct unwinder *u)
{
	size_t i, n = 0;

	for (i = 0; i < u->nr_holds; i++) {
		uint32_t tgid = u->holds[i].tgid;

		if (!u->holds[i].nr || !(kill((pid_t)tgid, 0) && errno == ESRCH))
			continue;
		bpf_map_delete_elem(u->m.procs_fd, &tgid);
		release(u, tgid);
		if (u->oracle)
			unwind_oracle__forget(u->oracle, (int)tgid);
		n++;
	}
	return n;
}

/*
 * Load process @tgid: its executable mappings, published at once with the
 * objects already built (the others pending: frame pointers from there,
 * said so), then again once the rest are built.
 */
static int load_process(struct unwinder *u, int tgid)
{
	struct offcpu_unw_proc *pv = u->pv;
	struct pending *pend = u->pend;
	char path[64], line[4096 + 128];
	size_t npend = 0, i;
	bool jit = false;
	uint64_t *last, res_start = 0, res_end = 0;
	int created, err = 0;
	FILE *f;

	/* asked again no sooner than RELOAD_NS, loaded or not; an exec after
	 * this instant is served at once (these mappings may be the old ones) */
	last = hashmap__upsert(&u->last, &tgid, sizeof(tgid), &created);
	if (last)
		*last = now_ns();
	/* an exec or new mappings: the oracle reads the process's modules again */
	if (u->oracle)
		unwind_oracle__forget(u->oracle, tgid);
	snprintf(path, sizeof(path), "/proc/%d/maps", tgid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	pv->nr = 0;
	pv->pad = 0;
	while (fgets(line, sizeof(line), f)) {
		struct maps_line ml;
		struct offcpu_unw_map *m;
		char range[64];
		uint32_t id = 0;

		if (maps_line__parse(line, &ml))
			continue;
		/*
		 * A JIT's code range (V8's, the JVM's code cache) is reserved
		 * inaccessible and made executable piece by piece: the reserved
		 * part next to JIT code is taken as JIT code too, so that code
		 * made there since this load is walked as JIT code (a pc there
		 * is in anonymous executable memory by then).
		 */
		if (ml.perms[2] != 'x') {
			bool reserved = !ml.name[0] && !strncmp(ml.perms, "---", 3);

			res_start = res_end = 0;
			if (!reserved)
				continue;
			if (!(pv->nr && pv->maps[pv->nr - 1].obj == OFFCPU_UNW_OBJ_JIT &&
			      pv->maps[pv->nr - 1].end == ml.start)) {
				res_start = ml.start; /* maybe before JIT code */
				res_end = ml.end;
				continue;
			}
		}
		if (!ml.name[0] && ml.perms[2] == 'x' && res_end == ml.start && res_end &&
		    pv->nr < OFFCPU_UNW_MAPS)
			pv->maps[pv->nr++] = (struct offcpu_unw_map){ .start = res_start, .end = res_end,
								      .obj = OFFCPU_UNW_OBJ_JIT };
		res_start = res_end = 0;
		if (pv->nr == OFFCPU_UNW_MAPS) {
			u->st.truncated++;
			break;
		}
		m = &pv->maps[pv->nr];
		*m = (struct offcpu_unw_map){ .start = ml.start, .end = ml.end };
		if (ml.name[0] == '/') {
			snprintf(range, sizeof(range), "%llx-%llx", (unsigned long long)ml.start,
				 (unsigned long long)ml.end);
			id = file_object(u, tgid, range, ml.name, false);
			if (id == OFFCPU_UNW_OBJ_PENDING) {
				pend[npend].map = pv->nr;
				pend[npend].pgoff = ml.pgoff;
				snprintf(pend[npend].range, sizeof(pend[npend].range), "%s", range);
				snprintf(pend[npend].name, sizeof(pend[npend].name), "%s", ml.name);
				npend++;
			}
		} else if (!strcmp(ml.name, "[vdso]")) {
			id = vdso_object(u);
		} else if (!ml.name[0]) {
			/* anonymous executable memory (or reserved next to it): JIT
			 * code, which keeps frame pointers */
			id = OFFCPU_UNW_OBJ_JIT;
			jit = true;
		}
		set_object(u, m, id, ml.pgoff);
		pv->nr++;
	}
	fclose(f);
	if (jit && u->on_jit && !u->stop)
		u->on_jit(u->jit_arg, tgid);
	if (u->on_load && !u->stop)
		u->on_load(u->load_arg, tgid);
	for (;;) {
		if (bpf_map_update_elem(u->m.procs_fd, &tgid, pv, BPF_ANY)) {
			err = -errno;
			if (errno == E2BIG || errno == ENOMEM)
				u->st.procs_full++;
			return err;
		}
		hold_objects(u, (uint32_t)tgid, pv);
		if (!npend)
			break;
		for (i = 0; i < npend; i++)
			set_object(u, &pv->maps[pend[i].map],
				   file_object(u, tgid, pend[i].range, pend[i].name, true), pend[i].pgoff);
		npend = 0;
	}
	u->st.processes++;
	return 0;
}

int unwinder__add_process(struct unwinder *u, int tgid)
{
	int err;

	pthread_mutex_lock(&u->lock);
	err = load_process(u, tgid);
	pthread_mutex_unlock(&u->lock);
	return err;
}

/* Forget processes that are gone: their mappings, and when they were loaded. */
static void prune(struct unwinder *u)
{
	uint32_t key, next, dead[256];
	size_t nr = 0, i;
	void *prev = NULL;

	while (nr < 256 && bpf_map_get_next_key(u->m.procs_fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (kill((pid_t)key, 0) && errno == ESRCH)
			dead[nr++] = key;
	}
	pthread_mutex_lock(&u->lock);
	for (i = 0; i < nr; i++) {
		bpf_map_delete_elem(u->m.procs_fd, &dead[i]);
		release(u, dead[i]);
		if (u->oracle)
			unwind_oracle__forget(u->oracle, (int)dead[i]);
	}
	pthread_mutex_unlock(&u->lock);
}

/* Serve what the BPF program asked for; a process asked again soon waits its turn. */
/*
 * Serve the requests: 0 when none is left, 1 when some wait for their
 * process's reload interval, 2 when more may be in the map than one pass took.
 */
static int serve(struct unwinder *u)
{
	uint32_t key, next, ask[256];
	size_t nr = 0, i;
	void *prev = NULL;
	uint64_t now = now_ns(), *last;
	bool waiting = false;
	size_t served = 0;

	while (nr < 256 && bpf_map_get_next_key(u->m.req_fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		ask[nr++] = key;
	}
	for (i = 0; i < nr; i++) {
		uint64_t asked = 0;
		bool wait;

		bpf_map_lookup_elem(u->m.req_fd, &ask[i], &asked);
		pthread_mutex_lock(&u->lock);
		last = hashmap__find(&u->last, &ask[i], sizeof(ask[i]));
		/* loaded lately, and no exec since that load began */
		wait = last && now - *last < RELOAD_NS &&
		       !((asked & OFFCPU_UNW_REQ_EXEC) &&
			 (asked & ~OFFCPU_UNW_REQ_EXEC) >= *last);
		pthread_mutex_unlock(&u->lock);
		if (wait) {
			waiting = true;
			continue;
		}
		bpf_map_delete_elem(u->m.req_fd, &ask[i]);
		served++;
		if (unwinder__add_process(u, (int)ask[i]) == -ESRCH) {
			bpf_map_delete_elem(u->m.procs_fd, &ask[i]);
			pthread_mutex_lock(&u->lock);
			release(u, ask[i]);
			pthread_mutex_unlock(&u->lock);
		}
	}
	/* a full pass that served some: the map may hold more, read at once */
	return nr == 256 && served ? 2 : waiting;
}

/*
 * One table walk against libdw's unwinding of the same registers and stack
 * copy: the same frames; the same as far as libdw could read (the copy
 * ended); different; shorter than libdw's (the walk gave up first); or
 * libdw could not unwind it at all (the process is gone).
 */
static int on_verify(void *ctx, void *data, size_t size)
{
	struct unwinder *u = ctx;
	const struct offcpu_unw_sample *smp = data;
	uint64_t ref[OFFCPU_MAX_STACK_DEPTH];
	uint32_t n, i;
	bool complete;
	int m;

	if (size < sizeof(*smp))
		return 0;
	n = smp->nr > OFFCPU_MAX_STACK_DEPTH ? OFFCPU_MAX_STACK_DEPTH : smp->nr;
	complete = !(n && OFFCPU_UNW_IS_MARK(smp->ips[n - 1]));
	if (!complete)
		n--;
	/* a walk finished in user space names itself before its mark */
	if (n && OFFCPU_UNW_IS_DEFER(smp->ips[n - 1]))
		n--;
	/* under the lock: a load (from the main thread too) forgets the
	 * process's old modules in the oracle, which is not thread-safe */
	pthread_mutex_lock(&u->lock);
	m = unwind_oracle__unwind(u->oracle, (int)smp->tgid, (int)smp->tid, smp->ip, smp->sp,
				  smp->bp, smp->stack, smp->copy_len, ref, OFFCPU_MAX_STACK_DEPTH);
	u->st.verified++;
	if (m <= 0) {
		u->st.verify_failed++;
		goto out;
	}
	for (i = 0; i < n && i < (uint32_t)m; i++)
		if (smp->ips[i] != ref[i])
			break;
	if (i < n && i < (uint32_t)m) {
		u->st.verify_differ++;
		if (u->st.verify_differ <= 5)
			pr_info("verify: tid %u: table walk and libdw differ at frame %u of %u/%d: "
				"%#llx against %#llx", smp->tid, i, n, m,
				(unsigned long long)smp->ips[i], (unsigned long long)ref[i]);
	} else if ((uint32_t)m == n) {
		u->st.verify_same++;
	} else if ((uint32_t)m < n) {
		u->st.verify_prefix++;
	} else {
		u->st.verify_shorter++;
		if (complete)
			u->st.verify_differ++;
	}
out:
	pthread_mutex_unlock(&u->lock);
	return 0;
}

/*
 * The thread sleeps until BPF asks for a process (unw_wake), a request it
 * put off is due, the dead processes' tables are due for release, or it is
 * stopped: nothing is read while nothing happens.
 */
static void *run(void *arg)
{
	struct unwinder *u = arg;
	uint64_t pruned = now_ns(), loads = 0;
	int waiting = 0;

	while (!u->stop) {
		struct epoll_event ev[2];
		uint64_t now, due;

		ring_buffer__consume(u->wake); /* the wakes and the walks to verify */
		waiting = serve(u);
		now = now_ns();
		if (now - pruned > PRUNE_NS) {
			prune(u);
			pruned = now = now_ns();
		}
		due = pruned + PRUNE_NS - now;
		if (waiting && due > RELOAD_NS)
			due = RELOAD_NS;
		if (waiting == 2)
			continue; /* the rest of the requests at once */
		/* a burst of loads over: what its builds took back goes back to
		 * the system (tens of MiB on a busy machine, in this thread's arena) */
		if (!waiting && u->st.processes != loads) {
			loads = u->st.processes;
			malloc_trim(0);
		}
		epoll_wait(u->epfd, ev, 2, (int)(due / 1000000) + 1);
	}
	return NULL;
}

int unwinder__start(struct unwinder *u)
{
	int err = worker__start(&u->thread, run, u); /* signals go to the main thread */

	if (err)
		return err;
	u->running = true;
	return 0;
}

void unwinder__stop(struct unwinder *u)
{
	if (!u || !u->running)
		return;
	u->stop = 1;
	(void)eventfd_write(u->stopfd, 1); /* cannot fail: the counter is far from full */
	/* a build stops at once; only a file that blocks a read holds the
	 * thread (an NFS server gone): the recording does not wait for it */
	if (!worker__join_within(u->thread, UNWINDER_STOP_MS, "the unwind table loader")) {
		u->abandoned = true;
		u->running = false;
		return;
	}
	u->running = false;
	if (u->verify)
		ring_buffer__consume(u->wake); /* the last walks */
}

void unwinder__stats(struct unwinder *u, struct unwinder_stats *st)
{
	struct tablemem_stats ts;

	/* an abandoned thread may hold the lock for ever: read without it */
	if (!u->abandoned)
		pthread_mutex_lock(&u->lock);
	*st = u->st;
	tablemem__stats(u->tm, &ts);
	if (!u->abandoned)
		pthread_mutex_unlock(&u->lock);
	st->rows = ts.rows;
	st->rows_cap = ts.rows_cap;
	st->rules = ts.rules;
	st->rules_full = ts.rules_full;
	st->owner_full = ts.owner_full;
	st->first_owner = ts.first_owner;
	st->reclaimed = ts.reclaimed;
	st->reclaimed_rows = ts.reclaimed_rows;
	st->grace_periods = ts.grace_periods;
	st->bytes = ts.bytes;
}

void unwinder__free(struct unwinder *u)
{
	if (!u)
		return;
	unwinder__stop(u);
	if (u->abandoned)
		return; /* its thread still uses it */
	ring_buffer__free(u->wake);
	if (u->epfd >= 0)
		close(u->epfd);
	if (u->stopfd >= 0)
		close(u->stopfd);
	unwind_oracle__free(u->oracle);
	tablemem__free(u->tm);
	hashmap__free(&u->objs);
	hashmap__free(&u->last);
	hashmap__free(&u->held);
	for (size_t i = 0; i < u->nr_holds; i++)
		free(u->holds[i].ids);
	free(u->holds);
	free(u->pv);
	free(u->pend);
	free(u);
}
