// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "objread.h"
#include "mounts.h"

/* messages name paths: one too long for its buffer is cut, on purpose */
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

#define WALK_DEPTH 64
#define WALK_LINKS 40

static int open_path(const char *path, int flags)
{
	int fd = open(path, O_PATH | O_CLOEXEC | flags);

	return fd < 0 ? -errno : fd;
}

/*
 * Where the walk of @path begins, and in which process's mount namespace:
 * /proc/PID/root/REST from that process's root (*@rest = REST); any other
 * /proc/PID/... path is one open (procfs asks no other file system; a magic
 * link such as map_files/RANGE lands on its file without a lookup), with
 * *@rest NULL; anything else from this process's root. Returns an O_PATH
 * descriptor or -errno.
 */
static int walk_start(const char *path, int *pid, const char **rest)
{
	const char *p = path + 6;
	char root[64], *end;
	long v;

	*pid = 0;
	*rest = path;
	if (strncmp(path, "/proc/", 6) || *p < '1' || *p > '9')
		return open_path("/", O_DIRECTORY);
	v = strtol(p, &end, 10);
	if (v <= 0 || v > INT32_MAX || *end != '/')
		return -EINVAL;
	*pid = (int)v;
	if (!strncmp(end, "/root", 5) && (end[5] == '/' || !end[5])) {
		snprintf(root, sizeof(root), "/proc/%d/root", *pid);
		*rest = end + 5;
		return open_path(root, O_DIRECTORY);
	}
	*rest = NULL;
	return open_path(path, 0);
}

/*
 * Resolve @rest from @root (taken over) one component at a time, each opened
 * O_PATH|O_NOFOLLOW from its directory's descriptor and its mount checked
 * (mounts.h) before anything else is asked of it: no lookup, stat or open
 * ever reaches a file system a user serves. Symbolic links are followed (as
 * any reader of the path would), an absolute one from @root: a process's
 * own root for its paths. Returns an O_PATH descriptor or -errno.
 */
static int walk(int root, int pid, const char *rest, unsigned flags)
{
	int dirs[WALK_DEPTH], depth = 0, links = 0, fd = -1, err = 0;
	char *todo = strdup(rest), *c, *next;

	dirs[0] = root;
	if (!todo) {
		close(root);
		return -ENOMEM;
	}
	for (c = todo; !err; c = next) {
		struct stat st;

		while (*c == '/')
			c++;
		if (!*c)
			break;
		next = c + strcspn(c, "/");
		if (*next)
			*next++ = 0;
		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, "..")) {
			if (depth)
				close(dirs[depth--]);
			continue;
		}
		fd = openat(dirs[depth], c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		err = fd < 0 ? -errno : mounts__check_fd(pid, fd);
		if (!err && fstat(fd, &st))
			err = -errno;
		if (err)
			break;
		if (S_ISLNK(st.st_mode) && (flags & OBJREAD_NO_LINKS)) {
			err = -ELOOP;
			break;
		}
		if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t n = readlinkat(fd, "", target, sizeof(target) - 1);
			size_t left = strlen(next);
			char *more;

			close(fd);
			fd = -1;
			if (n <= 0 || ++links > WALK_LINKS) {
				err = n <= 0 ? -EINVAL : -ELOOP;
				break;
			}
			target[n] = 0;
			/* the rest of the path, after the link's target */
			more = malloc((size_t)n + left + 2);
			if (!more) {
				err = -ENOMEM;
				break;
			}
			snprintf(more, (size_t)n + left + 2, "%s/%s", target, next);
			free(todo);
			todo = next = more;
			if (target[0] == '/')
				while (depth)
					close(dirs[depth--]);
			continue;
		}
		if (!*next)
			break; /* the file */
		if (!S_ISDIR(st.st_mode) || depth + 1 >= WALK_DEPTH) {
			err = S_ISDIR(st.st_mode) ? -ENAMETOOLONG : -ENOTDIR;
			break;
		}
		dirs[++depth] = fd;
		fd = -1;
	}
	free(todo);
	if (!err && fd < 0)
		fd = dup(dirs[depth]); /* the path names a directory */
	while (depth >= 0)
		close(dirs[depth--]);
	if (err && fd >= 0)
		close(fd);
	return err ? err : fd < 0 ? -errno : fd;
}

/* An O_PATH descriptor of @path, walked and checked as objread_open() says; its stat in @st. */
static int lookup(const char *path, struct stat *st, unsigned flags)
{
	const char *rest;
	int pfd, pid, err;

	pfd = walk_start(path, &pid, &rest);
	if (pfd < 0)
		return pfd;
	err = mounts__check_fd(pid, pfd);
	if (err) {
		close(pfd);
		return err;
	}
	if (rest && (pfd = walk(pfd, pid, rest, flags)) < 0)
		return pfd;
	if (fstat(pfd, st)) {
		err = -errno;
		close(pfd);
		return err;
	}
	return pfd;
}

int objread_stat(const char *path, struct stat *st)
{
	int pfd = lookup(path, st, 0);

	if (pfd < 0)
		return pfd;
	close(pfd);
	return 0;
}

int objread_open(const char *path, struct stat *st)
{
	return objread_open_flags(path, st, 0);
}

int objread_open_flags(const char *path, struct stat *st, unsigned flags)
{
	struct stat sb, *s = st ? st : &sb;
	char self[64];
	int pfd = lookup(path, s, flags), fd, err;

	if (pfd < 0)
		return pfd;
	if (!S_ISREG(s->st_mode)) {
		close(pfd);
		return -EINVAL;
	}
	/* the same inode as was checked; O_NONBLOCK: a lease's holder is not
	 * waited for (the open fails), a fifo's writer neither */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	err = fd < 0 ? -errno : 0;
	close(pfd);
	return fd < 0 ? err : fd;
}

/* The mount id of what @fd is open on, asked of no file system (mounts.h); 0 on failure. */
static uint64_t mnt_of(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_MNT_ID,
		  &stx) ||
	    !(stx.stx_mask & STATX_MNT_ID))
		return 0;
	return stx.stx_mnt_id;
}

int objread_open_dir(const char *path, unsigned flags, uint64_t *mnt)
{
	struct stat st;
	int pfd = lookup(path, &st, flags);

	if (pfd < 0)
		return pfd;
	*mnt = mnt_of(pfd);
	if (!S_ISDIR(st.st_mode) || !*mnt) {
		close(pfd);
		return S_ISDIR(st.st_mode) ? -ENOTSUP : -ENOTDIR;
	}
	return pfd;
}

int objread_openat(int dir, uint64_t mnt, const char *name, struct stat *st)
{
	struct stat sb, *s = st ? st : &sb;
	char self[64];
	int pfd, fd, err;

	if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	pfd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	/* the directory's mount was checked; a file mounted over is another */
	err = mnt_of(pfd) != mnt ? -EXDEV : fstat(pfd, s) ? -errno : 0;
	if (!err && S_ISLNK(s->st_mode))
		err = -ELOOP;
	else if (!err && !S_ISREG(s->st_mode))
		err = -EINVAL;
	if (err) {
		close(pfd);
		return err;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	err = fd < 0 ? -errno : 0;
	close(pfd);
	return fd < 0 ? err : fd;
}

const char *objread_why(int err)
{
	if (err == -EINVAL)
		return "not a regular file";
	if (err == -EWOULDBLOCK)
		return "another process holds a lease on it (not waited for)";
	return mounts__why(err);
}

int objread_pread(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int fail(char *err, size_t errlen, int e, const char *what)
{
	if (err)
		snprintf(err, errlen, "%s", what);
	return e;
}

void *elfobj__read(const struct elfobj *o, uint64_t off, uint64_t len, uint64_t max)
{
	void *p;
	int e;

	if (off > o->size || len > o->size - off) {
		errno = EINVAL;
		return NULL;
	}
	if (len > max) {
		errno = EFBIG;
		return NULL;
	}
	p = malloc(len ? len : 1);
	if (!p)
		return NULL;
	if (o->fd < 0) {
		memcpy(p, o->mem + off, len);
		return p;
	}
	e = objread_pread(o->fd, p, len, off);
	if (e) {
		free(p);
		errno = -e;
		return NULL;
	}
	return p;
}

static int read_headers(struct elfobj *o, char *err, size_t errlen)
{
	const unsigned char *id = o->eh.e_ident;
	uint64_t nsh, shstrndx;

	if (memcmp(id, ELFMAG, SELFMAG))
		return fail(err, errlen, -ENOEXEC, "not an ELF file");
	if (id[EI_CLASS] != ELFCLASS64 || id[EI_DATA] != ELFDATA2LSB)
		return fail(err, errlen, -ENOEXEC, "not a little-endian 64-bit ELF file");
	if (o->eh.e_machine != EM_X86_64)
		return fail(err, errlen, -ENOTSUP, "not x86-64");
	if (o->eh.e_phnum && o->eh.e_phentsize != sizeof(Elf64_Phdr))
		return fail(err, errlen, -EINVAL, "program headers of an unknown size");
	if (o->eh.e_phnum) {
		o->ph = elfobj__read(o, o->eh.e_phoff, (uint64_t)o->eh.e_phnum * sizeof(Elf64_Phdr),
				     ELFOBJ_MAX_READ);
		if (!o->ph)
			return fail(err, errlen, errno == EIO ? -EIO : -EINVAL,
				    errno == EIO ? "the file shrank while it was read" :
						   "program headers outside the file");
		o->nph = o->eh.e_phnum;
	}
	if (!o->eh.e_shoff)
		return 0; /* no sections: the segments are all there is */
	if (o->eh.e_shentsize != sizeof(Elf64_Shdr))
		return fail(err, errlen, -EINVAL, "section headers of an unknown size");
	nsh = o->eh.e_shnum;
	shstrndx = o->eh.e_shstrndx;
	if (!nsh || shstrndx == SHN_XINDEX) {
		/* more sections than the header holds: their number is in section 0 */
		Elf64_Shdr s0;
		void *p = elfobj__read(o, o->eh.e_shoff, sizeof(s0), sizeof(s0));

		if (!p)
			return fail(err, errlen, -EINVAL, "section headers outside the file");
		memcpy(&s0, p, sizeof(s0));
		free(p);
		if (!nsh)
			nsh = s0.sh_size;
		if (shstrndx == SHN_XINDEX)
			shstrndx = s0.sh_link;
	}
	if (nsh > o->size / sizeof(Elf64_Shdr))
		return fail(err, errlen, -EINVAL, "more section headers than the file holds");
	o->sh = elfobj__read(o, o->eh.e_shoff, nsh * sizeof(Elf64_Shdr), ELFOBJ_MAX_READ);
	if (!o->sh)
		return fail(err, errlen, errno == EIO ? -EIO : -EINVAL,
			    errno == EIO ? "the file shrank while it was read" :
					   "section headers outside the file");
	o->nsh = (size_t)nsh;
	if (shstrndx < nsh && o->sh[shstrndx].sh_type != SHT_NOBITS) {
		const Elf64_Shdr *s = &o->sh[shstrndx];

		o->shstr = elfobj__read(o, s->sh_offset, s->sh_size, 16 << 20);
		if (!o->shstr && errno == EIO)
			return fail(err, errlen, -EIO, "the file shrank while it was read");
		if (o->shstr)
			o->shstr_size = s->sh_size;
	}
	return 0;
}

static int open_common(struct elfobj *o, char *err, size_t errlen)
{
	void *p = elfobj__read(o, 0, sizeof(o->eh), sizeof(o->eh));
	int e;

	if (!p)
		return fail(err, errlen, errno == EIO ? -EIO : -ENOEXEC,
			    errno == EIO ? "the file shrank while it was read" : "not an ELF file");
	memcpy(&o->eh, p, sizeof(o->eh));
	free(p);
	e = read_headers(o, err, errlen);
	if (e)
		elfobj__close(o);
	return e;
}

int elfobj__open(struct elfobj *o, const char *path, char *err, size_t errlen)
{
	struct stat st;
	int fd;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	fd = objread_open(path, &st);
	if (fd < 0) {
		if (err)
			snprintf(err, errlen, "cannot open it: %s", fd == -EINVAL ?
				 "not a regular file" : objread_why(fd));
		return fd;
	}
	o->fd = fd;
	o->size = (uint64_t)st.st_size;
	return open_common(o, err, errlen);
}

int elfobj__open_mem(struct elfobj *o, const void *image, size_t size, char *err, size_t errlen)
{
	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->mem = image;
	o->size = size;
	return open_common(o, err, errlen);
}

const Elf64_Shdr *elfobj__section(const struct elfobj *o, const char *name)
{
	size_t i, len = strlen(name);

	for (i = 0; i < o->nsh && o->shstr; i++) {
		uint32_t n = o->sh[i].sh_name;

		if (n < o->shstr_size && o->shstr_size - n > len &&
		    !memcmp(o->shstr + n, name, len + 1))
			return &o->sh[i];
	}
	return NULL;
}

int elfobj__dynsyms(const struct elfobj *o, struct elfsyms *s)
{
	const Elf64_Shdr *ds = NULL, *ss;
	size_t i;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < o->nsh && !ds; i++)
		if (o->sh[i].sh_type == SHT_DYNSYM)
			ds = &o->sh[i];
	if (!ds || ds->sh_link >= o->nsh || ds->sh_entsize != sizeof(Elf64_Sym))
		return -ENOENT;
	ss = &o->sh[ds->sh_link];
	if (!ss->sh_size)
		return -ENOENT;
	s->v = elfobj__read(o, ds->sh_offset, ds->sh_size, 64 << 20);
	s->str = s->v ? elfobj__read(o, ss->sh_offset, ss->sh_size, 64 << 20) : NULL;
	if (!s->v || !s->str)
		return errno ? -errno : -EIO;
	s->str[ss->sh_size - 1] = 0;
	s->str_size = ss->sh_size;
	s->n = ds->sh_size / sizeof(Elf64_Sym);
	return 0;
}

const char *elfsyms__name(const struct elfsyms *s, size_t i)
{
	if (i >= s->n || s->v[i].st_name >= s->str_size || s->v[i].st_shndx == SHN_UNDEF)
		return NULL;
	return s->str + s->v[i].st_name;
}

void elfsyms__free(struct elfsyms *s)
{
	free(s->v);
	free(s->str);
	memset(s, 0, sizeof(*s));
}

/* The build id among the notes in @p (@size bytes), 0 if none. */
static size_t notes_build_id(const uint8_t *p, uint64_t size, uint8_t *out, size_t cap)
{
	uint64_t off = 0;

	while (size - off >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		uint64_t name, desc, next;

		memcpy(&nh, p + off, sizeof(nh));
		name = off + sizeof(nh);
		desc = name + (((uint64_t)nh.n_namesz + 3) & ~3ULL);
		next = desc + (((uint64_t)nh.n_descsz + 3) & ~3ULL);
		if (desc > size || next > size || nh.n_descsz > size)
			return 0;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && !memcmp(p + name, "GNU", 4) &&
		    nh.n_descsz) {
			size_t n = nh.n_descsz > cap ? cap : nh.n_descsz;

			memcpy(out, p + desc, n);
			return n;
		}
		off = next;
	}
	return 0;
}

size_t elfobj__build_id(const struct elfobj *o, uint8_t *out, size_t cap)
{
	size_t i, n = 0;

	for (i = 0; i < o->nph && !n; i++) {
		uint8_t *p;

		if (o->ph[i].p_type != PT_NOTE)
			continue;
		p = elfobj__read(o, o->ph[i].p_offset, o->ph[i].p_filesz, 1 << 20);
		if (p)
			n = notes_build_id(p, o->ph[i].p_filesz, out, cap);
		free(p);
	}
	for (i = 0; i < o->nsh && !n; i++) {
		uint8_t *p;

		if (o->sh[i].sh_type != SHT_NOTE)
			continue;
		p = elfobj__read(o, o->sh[i].sh_offset, o->sh[i].sh_size, 1 << 20);
		if (p)
			n = notes_build_id(p, o->sh[i].sh_size, out, cap);
		free(p);
	}
	return n;
}

void elfobj__close(struct elfobj *o)
{
	if (o->fd >= 0)
		close(o->fd);
	free(o->ph);
	free(o->sh);
	free(o->shstr);
	memset(o, 0, sizeof(*o));
	o->fd = -1;
}
