// SPDX-License-Identifier: GPL-2.0
/* Opening a directory without following another user's links (safepath.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "safepath.h"

/* messages name paths: one too long for its buffer is cut, on purpose */
#pragma GCC diagnostic ignored "-Wformat-truncation"

/*
 * Resolve @path from directory @fd (which it takes over) one component at a
 * time, each opened with O_NOFOLLOW and checked on its own descriptor, so
 * nothing can be swapped between a check and its use. A symbolic link is
 * read and resolved the same way, and followed only where
 * fs.protected_symlinks=1 would follow it: not a link owned by another user
 * than us and the directory's owner in a sticky world-writable directory.
 * Returns a directory descriptor or -errno with @why filled.
 */
static int walk(int fd, const char *path, int *links, char *why, size_t len)
{
	char *copy = strdup(path), *save = NULL, *c;
	int err = 0;

	if (!copy) {
		close(fd);
		return -ENOMEM;
	}
	if (path[0] == '/') {
		close(fd);
		fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			free(copy);
			return -errno;
		}
	}
	for (c = strtok_r(copy, "/", &save); c && !err; c = strtok_r(NULL, "/", &save)) {
		struct stat st, parent;
		char target[4096];
		ssize_t n;
		int nfd;

		if (!strcmp(c, "."))
			continue;
		nfd = openat(fd, c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 || fstat(nfd, &st)) {
			err = -errno;
			if (nfd >= 0)
				close(nfd);
			snprintf(why, len, "'%s': %s", c, strerror(-err));
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			close(fd);
			fd = nfd;
			continue;
		}
		if (!S_ISLNK(st.st_mode)) {
			close(nfd);
			err = -ENOTDIR;
			snprintf(why, len, "'%s' is not a directory", c);
			break;
		}
		if (fstat(fd, &parent)) {
			err = -errno;
			close(nfd);
			break;
		}
		if ((parent.st_mode & S_ISVTX) && (parent.st_mode & S_IWOTH) &&
		    st.st_uid != geteuid() && st.st_uid != parent.st_uid) {
			close(nfd);
			err = -ELOOP;
			snprintf(why, len, "'%s' is a symbolic link owned by user %u in a "
				 "world-writable sticky directory; offcpu does not follow it", c,
				 (unsigned)st.st_uid);
			break;
		}
		n = readlinkat(nfd, "", target, sizeof(target) - 1);
		close(nfd);
		if (n < 0 || ++*links > 40) {
			err = n < 0 ? -errno : -ELOOP;
			snprintf(why, len, "'%s': %s", c, strerror(-err));
			break;
		}
		target[n] = 0;
		/* the link's target, from the directory that holds the link */
		fd = walk(fd, target, links, why, len);
		if (fd < 0) {
			err = fd;
			fd = -1;
		}
	}
	free(copy);
	if (err) {
		if (fd >= 0)
			close(fd);
		return err;
	}
	return fd;
}

int safepath__open_dir(const char *path, char *why, size_t len)
{
	int links = 0, fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return walk(fd, path, &links, why, len);
}
