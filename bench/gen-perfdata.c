// SPDX-License-Identifier: GPL-2.0
/*
 * Writes a large perf.data file for the report benchmark, with offcpu's own
 * writer: one offcpu-time event, THREADS threads of one process, and
 * SAMPLES samples (in rounds of 10000, as perf writes) whose user call chains point into the functions of a real
 * binary (mapped with an MMAP2 record), so that both offcpu report and perf
 * report have real symbolization work to do. With -p the file is in perf's
 * pipe format (what offcpu record -o - writes), and -o - writes it to
 * standard output, to be piped into offcpu report -i -. With -y NAMES, the
 * first NAMES samples each end in a Python frame of its own, named by an
 * MMAP2 record written just before it, as offcpu record names them
 * (offcpu.h, "Named frames"): one process with NAMES Python names.
 *
 *   gen-perfdata -o FILE [-p] [-n SAMPLES] [-s STACKS] [-t THREADS] [-y NAMES] BINARY
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "offcpu.h"
#include "perfdata/writer.h"
#include "perfdata/sample.h"

#define BASE 0x555555554000ULL
#define PID 4242

static uint64_t rng = 88172645463325252ULL;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Offsets in the file of the functions of @path (vaddr - p_vaddr + p_offset). */
static size_t functions(const char *path, uint64_t **out)
{
	int fd = open(path, O_RDONLY);
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t n = 0, cap = 0, nph, i;
	GElf_Phdr text = { 0 };

	elf_version(EV_CURRENT);
	if (fd < 0 || !(elf = elf_begin(fd, ELF_C_READ, NULL)))
		return 0;
	elf_getphdrnum(elf, &nph);
	for (i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
			text = ph;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t k;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (k = 0; d && k < sh.sh_size / sh.sh_entsize; k++) {
			GElf_Sym s;

			if (!gelf_getsym(d, (int)k, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    s.st_size < 16 || s.st_value < text.p_vaddr ||
			    s.st_value >= text.p_vaddr + text.p_filesz)
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 1024;
				*out = realloc(*out, cap * sizeof(**out));
			}
			/* an address inside the function, past its first instruction */
			(*out)[n++] = s.st_value - text.p_vaddr + text.p_offset + 4 + (s.st_size - 8) / 2;
		}
	}
	elf_end(elf);
	close(fd);
	return n;
}

static int put(struct perf_writer *w, void *buf, size_t size)
{
	struct perf_event_header *h = buf;

	h->size = (uint16_t)((size + 7) & ~7UL);
	return perf_writer__write(w, h);
}

int main(int argc, char **argv)
{
	const char *out = NULL;
	char *bin;
	uint64_t nsamples = 1000000, *funcs = NULL, **stacks, t = 1000000000ULL, id = 1, total = 0;
	size_t nstacks = 5000, nthreads = 40, nfuncs, i, k, nnames = 0;
	uint64_t chain[64];
	static const struct perf_event_header round = { PERF_RECORD_FINISHED_ROUND, 0, 8 };
	struct perf_event_attr attr = { 0 };
	struct perf_writer *w;
	char buf[8192];
	struct stat st;
	uint32_t *depth;
	bool pipe_mode = false;
	int fd, c;

	while ((c = getopt(argc, argv, "o:pn:s:t:y:")) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'p': pipe_mode = true; break;
		case 'n': nsamples = strtoull(optarg, NULL, 10); break;
		case 's': nstacks = strtoul(optarg, NULL, 10); break;
		case 't': nthreads = strtoul(optarg, NULL, 10); break;
		case 'y': nnames = strtoul(optarg, NULL, 10); break;
		default: return 2;
		}
	}
	if (!out || optind != argc - 1 || !nstacks || !nthreads) {
		fprintf(stderr, "usage: gen-perfdata -o FILE [-p] [-n SAMPLES] [-s STACKS] [-t THREADS] "
			"[-y NAMES] BINARY\n");
		return 2;
	}
	bin = realpath(argv[optind], NULL);
	if (!bin) {
		fprintf(stderr, "gen-perfdata: %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	nfuncs = functions(bin, &funcs);
	if (nfuncs < 16 || stat(bin, &st)) {
		fprintf(stderr, "gen-perfdata: %s: too few function symbols (needs .symtab)\n", bin);
		return 1;
	}
	fd = strcmp(out, "-") ? open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644) : STDOUT_FILENO;
	w = fd < 0 ? NULL : pipe_mode ? perf_writer__new_pipe(fd) : perf_writer__new(fd);
	if (!w) {
		fprintf(stderr, "gen-perfdata: cannot create %s: %s\n", out, strerror(errno));
		return 1;
	}
	attr.size = PERFDATA_ATTR_SIZE;
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_BPF_OUTPUT;
	attr.sample_period = 1;
	attr.sample_type = OFFCPU_SAMPLE_TYPE;
	if (perf_writer__add_event(w, &attr, OFFCPU_EVENT_NAME, &id, 1))
		return 1;
	/* side band: one process, its threads, the binary mapped at BASE */
	for (i = 0; i <= nthreads; i++) {
		memset(buf, 0, 64);
		((struct perf_event_header *)buf)->type = PERF_RECORD_COMM;
		*(uint32_t *)(buf + 8) = PID;
		*(uint32_t *)(buf + 12) = PID + (uint32_t)i;
		snprintf(buf + 16, 16, i ? "bench-%zu" : "bench", i);
		if (put(w, buf, 16 + strlen(buf + 16) + 1))
			return 1;
	}
	memset(buf, 0, sizeof(buf));
	((struct perf_event_header *)buf)->type = PERF_RECORD_MMAP2;
	((struct perf_event_header *)buf)->misc = PERF_RECORD_MISC_USER;
	*(uint32_t *)(buf + 8) = PID;
	*(uint32_t *)(buf + 12) = PID;
	*(uint64_t *)(buf + 16) = BASE;
	*(uint64_t *)(buf + 24) = ((uint64_t)st.st_size + 4095) & ~4095ULL;
	*(uint32_t *)(buf + 64) = PROT_READ | PROT_EXEC;
	*(uint32_t *)(buf + 68) = MAP_PRIVATE;
	snprintf(buf + 72, 4096, "%s", bin);
	if (put(w, buf, 72 + strlen(buf + 72) + 1))
		return 1;
	/* distinct stacks: depth 6..29, frames drawn from the binary's functions */
	stacks = calloc(nstacks, sizeof(*stacks));
	depth = calloc(nstacks, sizeof(*depth));
	for (i = 0; i < nstacks; i++) {
		depth[i] = 6 + (uint32_t)(next_rand() % 24);
		stacks[i] = calloc(depth[i] + 1, sizeof(uint64_t));
		stacks[i][0] = (uint64_t)PERF_CONTEXT_USER;
		for (k = 1; k <= depth[i]; k++)
			stacks[i][k] = BASE + funcs[(k < 4 ? k * 7 : next_rand()) % nfuncs];
	}
	for (i = 0; i < nsamples; i++) {
		/* skewed: a few stacks are hot, as in real profiles */
		uint64_t r = next_rand();
		size_t sidx = (r % 4 == 0) ? (r >> 8) % nstacks : (r >> 8) % (nstacks / 50 + 1);
		struct perf_sample s = {
			.id = id,
			.ip = stacks[sidx][1],
			.pid = PID,
			.tid = PID + 1 + (uint32_t)((r >> 32) % nthreads),
			.time = t,
			.cpu = (uint32_t)(r >> 40) % 2,
			.period = 1000 + (r >> 20) % 10000000,
			.nr_ips = depth[sidx] + 1,
			.ips = stacks[sidx],
		};
		int size;

		if (i < nnames) {
			/* a Python frame of its own, named first, inside the stack's first frame */
			memset(buf, 0, 128);
			((struct perf_event_header *)buf)->type = PERF_RECORD_MMAP2;
			((struct perf_event_header *)buf)->misc = PERF_RECORD_MISC_USER;
			*(uint32_t *)(buf + 8) = PID;
			*(uint32_t *)(buf + 12) = PID;
			*(uint64_t *)(buf + 16) = OFFCPU_PYFRAME_OF(i + 1);
			*(uint64_t *)(buf + 24) = OFFCPU_PYFRAME_SIZE;
			*(uint32_t *)(buf + 64) = PROT_READ | PROT_EXEC;
			*(uint32_t *)(buf + 68) = MAP_PRIVATE;
			snprintf(buf + 72, 4096, OFFCPU_NAMED_PY "py_function_%zu (app.py:%zu)", i + 1,
				 i + 1);
			if (put(w, buf, 72 + strlen(buf + 72) + 1))
				return 1;
			chain[0] = (uint64_t)PERF_CONTEXT_USER;
			chain[1] = stacks[sidx][1];
			chain[2] = OFFCPU_PYFRAME_OF(i + 1);
			memcpy(chain + 3, stacks[sidx] + 2, (depth[sidx] - 1) * sizeof(*chain));
			s.ips = chain;
			s.nr_ips = depth[sidx] + 2;
		}
		size = perf_sample__encode(attr.sample_type, &s, buf, sizeof(buf));
		t += 1000;
		total += s.period;
		if (size < 0 || perf_writer__write(w, (struct perf_event_header *)buf))
			return 1;
		if (i % 10000 == 9999 && perf_writer__write(w, &round)) /* as perf writes them */
			return 1;
		perf_writer__note_time(w, t);
	}
	if (perf_writer__add_host_features(w, argc, argv) || perf_writer__finish(w)) {
		fprintf(stderr, "gen-perfdata: cannot write %s\n", out);
		return 1;
	}
	perf_writer__free(w);
	if (fd != STDOUT_FILENO)
		close(fd);
	/* what a report of it must find */
	fprintf(stderr, "gen-perfdata: %llu samples, %llu ns\n", (unsigned long long)nsamples,
		(unsigned long long)total);
	return 0;
}
