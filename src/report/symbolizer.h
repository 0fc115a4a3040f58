/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Symbols for recorded addresses: user binaries through libelf (.symtab,
 * .dynsym, separate debug files by build id or .gnu_debuglink, else from
 * debuginfod when DEBUGINFOD_URLS is set: debuginfo.h), [vdso] from this
 * process's own image, the kernel from /proc/kallsyms, and with --lines
 * source lines and inlined functions through libdw (the debug file's DWARF
 * when the binary has none). A debug file is used only when its build id is
 * the binary's. Each binary is opened and read once, on first use.
 */
#ifndef OFFCPU_REPORT_SYMBOLIZER_H
#define OFFCPU_REPORT_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "debuginfo.h"

struct symbolizer_opts {
	const char *kallsyms; /* default /proc/kallsyms */
	/*
	 * Separate debug files are looked for under this directory, then under
	 * /usr/lib/debug: DIR/.build-id/xx/yyyy.debug, DIR/BINARY'S DIR/DEBUGLINK.
	 */
	const char *debug_dir;
	bool lines; /* source lines and inlined frames */
	bool demangle;
	struct debuginfo_stats *debuginfod; /* if set: what debuginfod was asked, at the end */
};

/* One resolved frame; strings are owned by the symbolizer. */
struct sym_frame {
	const char *name; /* NULL: no symbol */
	const char *file; /* with lines, else NULL */
	uint32_t line;
	bool inlined;
};

struct symbolizer;
struct sym_dso;

struct symbolizer *symbolizer__new(const struct symbolizer_opts *o);
void symbolizer__free(struct symbolizer *s);

/*
 * The binary at @path as recorded (build id from the recording, may be
 * empty). Never NULL unless out of memory; a binary that cannot be read
 * resolves nothing.
 */
struct sym_dso *symbolizer__dso(struct symbolizer *s, const char *path, const uint8_t *build_id,
				size_t build_id_len);

/* Whether @d, once a frame of it was resolved, is a Go object. */
bool sym_dso__go(const struct sym_dso *d);

/*
 * Resolve @file_off (an offset in the file, as MMAP2's pgoff counts) in @d.
 * @ret: the address is a return address (look up the call instruction).
 * Fills up to @max frames, innermost (inlined) first, the function last.
 * Returns the number filled (0: no symbol).
 */
int sym_dso__resolve(struct symbolizer *s, struct sym_dso *d, uint64_t file_off, bool ret,
		     struct sym_frame *out, int max);

/*
 * A data object of @d at @addr, in a process that maps @d at @map_start
 * from file offset @map_pgoff (any of its mappings): NULL when @addr is in
 * none of @d's segments; else its ELF address in *@vaddr and the name of
 * the object symbol holding it (*@off bytes into it), "" when none does.
 */
const char *sym_dso__data(struct symbolizer *s, struct sym_dso *d, uint64_t map_start,
			  uint64_t map_pgoff, uint64_t addr, uint64_t *vaddr, uint64_t *off);
/*
 * What the recording says of its kernel, to check the running kernel's
 * kallsyms against before naming kernel frames with it: the kernel MMAP's
 * reference symbol (perf's "[kernel.kallsyms]_text": @ref_sym "_text" at
 * @ref_addr, its pgoff) and the build id of [kernel.kallsyms]. Either may be
 * given at any time before the first kernel frame.
 */
void symbolizer__kernel_mmap(struct symbolizer *s, const char *ref_sym, uint64_t ref_addr);
void symbolizer__kernel_build_id(struct symbolizer *s, const uint8_t *id, size_t len);

/*
 * Kernel symbol of @addr (kallsyms), or NULL. *@module is "[kernel.kallsyms]"
 * or "[MOD]". NULL for every address when the recording's kernel is not the
 * running one (a warning says once what differs); relocated when only its
 * KASLR offset differs.
 */
const char *symbolizer__kernel(struct symbolizer *s, uint64_t addr, const char **module);

/* Demangle a C++ or Rust name; returns a malloc'ed string or NULL if @name is not mangled. */
char *symbolizer__demangle(const char *name);

#endif
