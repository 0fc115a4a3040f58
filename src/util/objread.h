/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading files that other users control: the programs and libraries of the
 * processes offcpu records, which their owners can truncate, rewrite or
 * swap for a fifo, a device or a symbolic link to one while root reads them.
 *
 * - A path is opened only when it names a regular file: it is first opened
 *   with O_PATH (no open of a device's driver, no wait for a fifo's writer),
 *   checked on that descriptor, and reopened through /proc/self/fd, so what
 *   was checked is what is read.
 * - Files are read with pread into memory, never mapped: a file truncated
 *   under the reader gives a short read, an error for that file, not a
 *   SIGBUS that ends offcpu.
 * - An ELF object's headers and sections are read with every offset and
 *   size checked against the file, from a descriptor or from memory (the
 *   vDSO, fuzzing).
 *
 * Functions return 0 or -errno; where they take @err, it says why.
 */
#ifndef OFFCPU_UTIL_OBJREAD_H
#define OFFCPU_UTIL_OBJREAD_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/*
 * Open @path for reading if it is a regular file, as the process of the path
 * sees it: /proc/PID/root/... from that process's root, /proc/PID/map_files/
 * RANGE (any /proc/PID/... path) as one open of procfs, anything else from
 * this process's root. The path is walked one component at a time, each
 * mount checked before anything is asked of its file system (mounts.h), so
 * no lookup, stat, open or read reaches a file system a user serves;
 * symbolic links are followed as any reader of the path would. The open
 * never waits (O_NONBLOCK: not for a lease's holder, not for a fifo's
 * writer). Returns a descriptor, or -errno: -EINVAL for anything but a
 * regular file (@st, when given, gets its stat), -EWOULDBLOCK for a file
 * under a lease, those of mounts__check() for a mount that is refused.
 */
int objread_open(const char *path, struct stat *st);

/* The same, where @flags has OBJREAD_NO_LINKS: a symbolic link anywhere is -ELOOP. */
#define OBJREAD_NO_LINKS 1u
int objread_open_flags(const char *path, struct stat *st, unsigned flags);

/*
 * A directory to open files in later, perhaps after its process exited
 * (objread_openat()): an O_PATH descriptor of @path, walked and checked as
 * objread_open_flags() says; -ENOTDIR when it is no directory. Its mount id
 * in *@mnt.
 */
int objread_open_dir(const char *path, unsigned flags, uint64_t *mnt);

/*
 * Open @name (one component, no '/') in directory @dir (objread_open_dir(),
 * on mount @mnt) for reading if it is a regular file, with no link followed
 * and nothing asked of another mount's file system: a file on another mount
 * than its directory's (one mounted over it) is -EXDEV. As objread_open()
 * otherwise (@st gets its stat; O_NONBLOCK).
 */
int objread_openat(int dir, uint64_t mnt, const char *name, struct stat *st);

/* The stat of @path, looked up as objread_open() does (any type of file). 0 or -errno. */
int objread_stat(const char *path, struct stat *st);

/* Why objread_open() said @err, for a message. */
const char *objread_why(int err);

/* Read @len bytes at @off: 0, or -EIO when the file ended first (it shrank). */
int objread_pread(int fd, void *buf, size_t len, uint64_t off);

/* An ELF64 x86-64 object, from a file or from memory. */
struct elfobj {
	int fd; /* -1: from memory */
	const uint8_t *mem;
	uint64_t size; /* of the file (when opened) or the image */
	Elf64_Ehdr eh;
	Elf64_Phdr *ph;
	size_t nph;
	Elf64_Shdr *sh;
	size_t nsh;
	char *shstr; /* section names, NUL-terminated */
	size_t shstr_size;
};

/* The largest section or segment read whole (the budget of one object). */
#define ELFOBJ_MAX_READ (256ULL << 20)

/*
 * Read the headers of the object at @path (objread_open()) or in @image.
 * Anything but a little-endian ELF64 file is -ENOEXEC; another machine than
 * x86-64 -ENOTSUP; headers outside the file -EINVAL; @err says which.
 */
int elfobj__open(struct elfobj *o, const char *path, char *err, size_t errlen);
int elfobj__open_mem(struct elfobj *o, const void *image, size_t size, char *err, size_t errlen);
/* The section named @name, or NULL. */
const Elf64_Shdr *elfobj__section(const struct elfobj *o, const char *name);
/*
 * A copy of @len bytes at file offset @off (malloc'd, freed by the caller),
 * or NULL with errno: EINVAL outside the object, EFBIG over @max, EIO when
 * the file shrank.
 */
void *elfobj__read(const struct elfobj *o, uint64_t off, uint64_t len, uint64_t max);
/* An object's dynamic symbols, read whole (elfobj__dynsyms()). */
struct elfsyms {
	Elf64_Sym *v;
	size_t n;
	char *str; /* their names, NUL-terminated */
	size_t str_size;
};
/*
 * The dynamic symbol table and its names (each at most 64 MiB): 0, or
 * -ENOENT when there is none, -errno when it cannot be read. Freed with
 * elfsyms__free() either way.
 */
int elfobj__dynsyms(const struct elfobj *o, struct elfsyms *s);
/* Symbol @i's name if it is defined here and its name is in bounds, else NULL. */
const char *elfsyms__name(const struct elfsyms *s, size_t i);
void elfsyms__free(struct elfsyms *s);
/* The GNU build id (PT_NOTE segments, else SHT_NOTE sections): its length, 0 if none. */
size_t elfobj__build_id(const struct elfobj *o, uint8_t *out, size_t cap);
void elfobj__close(struct elfobj *o);

#endif
