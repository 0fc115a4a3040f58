// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "objread.h"

/* messages name paths: one too long for its buffer is cut, on purpose */
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

int objread_open(const char *path, struct stat *st)
{
	struct stat sb, *s = st ? st : &sb;
	char self[64];
	int pfd, fd, err;

	/* O_PATH: no driver's open, no wait for a writer; only a look */
	pfd = open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	if (fstat(pfd, s)) {
		err = -errno;
		close(pfd);
		return err;
	}
	if (!S_ISREG(s->st_mode)) {
		close(pfd);
		return -EINVAL;
	}
	/* the same inode as was checked, whatever the path names by now */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	err = fd < 0 ? -errno : 0;
	close(pfd);
	return fd < 0 ? err : fd;
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
				 "not a regular file" : strerror(-fd));
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
