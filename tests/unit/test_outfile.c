// SPDX-License-Identifier: GPL-2.0
/* The output primitive: what it creates, replaces, keeps and refuses. No root needed. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "unit.h"
#include "util/outfile.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/offcpu-unit.XXXXXX");
	if (!mkdtemp(dir))
		dir[0] = 0;
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "  cannot remove %s\n", dir);
}

static char *at(const char *name)
{
	static char p[4][128];
	static int i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, name);
	return p[i];
}

static int entries(void)
{
	char cmd[128];
	FILE *f;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls -A %s | wc -l", dir);
	f = popen(cmd, "r");
	if (f && fscanf(f, "%d", &n) != 1)
		n = -1;
	if (f)
		pclose(f);
	return n;
}

static int write_file(const char *path, const char *text)
{
	struct outfile f;
	int err = outfile__open(&f, path, OUTFILE_KEEP_OLD, 0600);

	if (!err)
		err = write(f.fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -EIO;
	if (!err)
		err = outfile__commit(&f);
	else
		outfile__discard(&f);
	outfile__free(&f);
	return err;
}

static int read_text(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY), n;

	if (fd < 0)
		return -1;
	n = (int)read(fd, buf, cap - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return n;
}

static void test_keep_old(void)
{
	char buf[64];

	setup();
	CHECK(write_file(at("x.data"), "one") == 0);
	CHECK(write_file(at("x.data"), "two") == 0);
	CHECK(write_file(at("x.data"), "three") == 0);
	read_text(at("x.data"), buf, sizeof(buf));
	CHECK_STR(buf, "three");
	read_text(at("x.data.old"), buf, sizeof(buf));
	CHECK_STR(buf, "two");
	CHECK_EQ_U64(entries(), 2);
	teardown();
}

static void test_refuse_symlinks(void)
{
	struct outfile f;
	char buf[64];
	struct stat st;

	setup();
	/* a symlink at the name: refused at open, the target untouched */
	CHECK(write_file(at("target"), "precious") == 0);
	CHECK(symlink(at("target"), at("x.data")) == 0);
	CHECK(outfile__open(&f, at("x.data"), OUTFILE_KEEP_OLD, 0600) == -EEXIST);
	CHECK(strstr(f.msg, "symbolic link") != NULL);
	read_text(at("target"), buf, sizeof(buf));
	CHECK_STR(buf, "precious");
	/* a symlink at NAME.old: refused too */
	CHECK(unlink(at("x.data")) == 0);
	CHECK(write_file(at("y.data"), "mine") == 0);
	CHECK(symlink(at("target"), at("y.data.old")) == 0);
	CHECK(outfile__open(&f, at("y.data"), OUTFILE_KEEP_OLD, 0600) == -EEXIST);
	CHECK(lstat(at("y.data.old"), &st) == 0 && S_ISLNK(st.st_mode));
	/* a symlink planted after open, before commit: the recording is kept aside */
	CHECK(unlink(at("y.data.old")) == 0);
	CHECK(outfile__open(&f, at("z.data"), OUTFILE_KEEP_OLD, 0600) == 0);
	CHECK(symlink(at("target"), at("z.data")) == 0);
	CHECK(outfile__commit(&f) == -EEXIST);
	CHECK(strstr(f.msg, "kept as") != NULL);
	outfile__free(&f);
	read_text(at("target"), buf, sizeof(buf));
	CHECK_STR(buf, "precious");
	teardown();
}

static void test_unique(void)
{
	struct outfile a, b, c;

	setup();
	CHECK(outfile__open(&a, at("r.data.1234"), OUTFILE_UNIQUE, 0600) == 0);
	CHECK(outfile__open(&b, at("r.data.1234"), OUTFILE_UNIQUE, 0600) == 0);
	CHECK(outfile__open(&c, at("r.data.1234"), OUTFILE_UNIQUE, 0600) == 0);
	CHECK(outfile__commit(&a) == 0);
	CHECK(outfile__commit(&b) == 0);
	CHECK(outfile__commit(&c) == 0);
	CHECK_STR(a.final, at("r.data.1234"));
	CHECK_STR(b.final, at("r.data.1234.1"));
	CHECK_STR(c.final, at("r.data.1234.2"));
	CHECK_EQ_U64(entries(), 3);
	outfile__free(&a);
	outfile__free(&b);
	outfile__free(&c);
	teardown();
}

static void test_directory_and_discard(void)
{
	struct outfile f;
	int fd;

	setup();
	CHECK(outfile__open(&f, at("d"), OUTFILE_DIR | OUTFILE_KEEP_OLD, 0600) == 0);
	fd = outfile__create_in(&f, "data");
	CHECK(fd >= 0);
	close(fd);
	fd = outfile__create_in(&f, "data.0");
	CHECK(fd >= 0);
	close(fd);
	/* discard removes the files it made and the directory */
	outfile__discard(&f);
	outfile__free(&f);
	CHECK_EQ_U64(entries(), 0);
	/* committed twice: d and d.old, each a recording directory */
	for (int i = 0; i < 3; i++) {
		CHECK(outfile__open(&f, at("d"), OUTFILE_DIR | OUTFILE_KEEP_OLD, 0600) == 0);
		fd = outfile__create_in(&f, "data");
		close(fd);
		CHECK(outfile__commit(&f) == 0);
		outfile__free(&f);
	}
	CHECK_EQ_U64(entries(), 2);
	/* d.old holding a file that is not a recording's: refused, nothing removed */
	fd = open(at("d.old/notes.txt"), O_CREAT | O_WRONLY, 0600);
	close(fd);
	CHECK(outfile__open(&f, at("d"), OUTFILE_DIR | OUTFILE_KEEP_OLD, 0600) == -EEXIST);
	CHECK(strstr(f.msg, "notes.txt") != NULL);
	CHECK(access(at("d.old/notes.txt"), F_OK) == 0);
	CHECK(access(at("d/data"), F_OK) == 0);
	/* an empty directory at NAME.old is no recording: refused, kept */
	CHECK(mkdir(at("e.old"), 0700) == 0);
	CHECK(outfile__open(&f, at("e"), OUTFILE_DIR | OUTFILE_KEEP_OLD, 0600) == 0);
	outfile__discard(&f); /* nothing at e yet: e.old is not looked at */
	outfile__free(&f);
	CHECK(outfile__open(&f, at("e"), OUTFILE_DIR | OUTFILE_KEEP_OLD, 0600) == 0);
	fd = outfile__create_in(&f, "data");
	close(fd);
	CHECK(outfile__commit(&f) == 0);
	outfile__free(&f);
	CHECK(outfile__open(&f, at("e"), OUTFILE_DIR | OUTFILE_KEEP_OLD, 0600) == -EEXIST);
	CHECK(strstr(f.msg, "without a recording's data file") != NULL);
	CHECK(access(at("e.old"), F_OK) == 0);
	teardown();
}

static void test_removes_only_its_own(void)
{
	struct outfile f;
	struct outfile_ref ref;

	setup();
	CHECK(outfile__open(&f, at("r.1"), OUTFILE_UNIQUE, 0600) == 0);
	CHECK(outfile__commit(&f) == 0);
	CHECK(outfile__ref(&f, &ref) == 0);
	outfile__free(&f);
	/* replaced by something else under the same name: left alone */
	CHECK(unlink(at("r.1")) == 0);
	CHECK(symlink("/etc/passwd", at("r.1")) == 0);
	CHECK(outfile__remove_ref(&ref) == -ESTALE);
	CHECK(access(at("r.1"), F_OK) == 0);
	outfile__ref_free(&ref);
	/* still its own: removed */
	CHECK(outfile__open(&f, at("r.2"), OUTFILE_UNIQUE, 0600) == 0);
	CHECK(outfile__commit(&f) == 0);
	CHECK(outfile__ref(&f, &ref) == 0);
	outfile__free(&f);
	CHECK(outfile__remove_ref(&ref) == 0);
	CHECK(access(at("r.2"), F_OK) != 0);
	outfile__ref_free(&ref);
	/* a missing directory: one message naming it */
	CHECK(outfile__open(&f, "/nonexistent-dir/x", 0, 0600) == -ENOENT);
	CHECK(strstr(f.msg, "/nonexistent-dir") != NULL);
	teardown();
}

/* The directory moved or removed, or the temporary removed or moved, before the commit. */
static void test_directory_moved_or_removed(void)
{
	char want[PATH_MAX + 32], real[PATH_MAX], tmp[48], buf[64];
	struct outfile f;

	setup();
	/* moved: committed where the directory is now, and named there */
	CHECK(mkdir(at("sub"), 0700) == 0);
	CHECK(outfile__open(&f, at("sub/x.data"), OUTFILE_KEEP_OLD, 0600) == 0);
	CHECK(write(f.fd, "moved", 5) == 5);
	CHECK(rename(at("sub"), at("moved")) == 0);
	CHECK(outfile__commit(&f) == 0);
	CHECK(realpath(dir, real) != NULL);
	snprintf(want, sizeof(want), "%s/moved/x.data", real);
	CHECK_STR(f.final, want);
	CHECK_STR(f.moved_from, at("sub"));
	outfile__free(&f);
	read_text(at("moved/x.data"), buf, sizeof(buf));
	CHECK_STR(buf, "moved");
	/* not moved: the path as given, no moved_from */
	CHECK(outfile__open(&f, at("moved/y.data"), OUTFILE_KEEP_OLD, 0600) == 0);
	CHECK(outfile__commit(&f) == 0);
	CHECK_STR(f.final, at("moved/y.data"));
	CHECK(f.moved_from == NULL);
	outfile__free(&f);
	/* the directory removed with the temporary in it: said, -ENOENT */
	CHECK(mkdir(at("gone"), 0700) == 0);
	CHECK(outfile__open(&f, at("gone/x.data"), OUTFILE_KEEP_OLD, 0600) == 0);
	snprintf(tmp, sizeof(tmp), "gone/%s", f.tmp);
	CHECK(unlink(at(tmp)) == 0 && rmdir(at("gone")) == 0);
	CHECK(outfile__commit(&f) == -ENOENT);
	CHECK(strstr(f.msg, "directory") && strstr(f.msg, "was removed") &&
	      strstr(f.msg, "the data is lost"));
	outfile__free(&f);
	/* the temporary removed on its own, something else put at its name */
	CHECK(outfile__open(&f, at("moved/z.data"), OUTFILE_KEEP_OLD, 0600) == 0);
	snprintf(tmp, sizeof(tmp), "moved/%s", f.tmp);
	CHECK(unlink(at(tmp)) == 0 && write_file(at(tmp), "theirs") == 0);
	CHECK(outfile__commit(&f) == -ENOENT);
	CHECK(strstr(f.msg, "removed its temporary") && strstr(f.msg, "the data is lost") &&
	      strstr(f.msg, "left alone"));
	outfile__free(&f);
	read_text(at(tmp), buf, sizeof(buf));
	CHECK_STR(buf, "theirs");
	CHECK(access(at("moved/z.data"), F_OK) != 0);
	/* the temporary moved away: not lost, and not renamed into place */
	CHECK(outfile__open(&f, at("moved/w.data"), OUTFILE_KEEP_OLD, 0600) == 0);
	snprintf(tmp, sizeof(tmp), "moved/%s", f.tmp);
	CHECK(rename(at(tmp), at("elsewhere")) == 0);
	CHECK(outfile__commit(&f) == -ENOENT);
	CHECK(strstr(f.msg, "moved its temporary") != NULL);
	outfile__free(&f);
	CHECK(access(at("elsewhere"), F_OK) == 0 && access(at("moved/w.data"), F_OK) != 0);
	/* --threads: the recording directory moved with its directory */
	CHECK(mkdir(at("t"), 0700) == 0);
	CHECK(outfile__open(&f, at("t/d"), OUTFILE_DIR | OUTFILE_KEEP_OLD, 0600) == 0);
	close(outfile__create_in(&f, "data"));
	CHECK(rename(at("t"), at("t2")) == 0);
	CHECK(outfile__commit(&f) == 0);
	snprintf(want, sizeof(want), "%s/t2/d", real);
	CHECK_STR(f.final, want);
	outfile__free(&f);
	CHECK(access(at("t2/d/data"), F_OK) == 0);
	teardown();
}

static void on_alarm(int sig)
{
	(void)sig;
}

/*
 * Another user's fifo in a sticky world-writable directory: refused at once,
 * not after a reader came (opening it would wait for one). Needs root to
 * give the fifo away.
 */
static void test_foreign_fifo_refused_at_once(void)
{
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	struct timespec t0, t1;
	struct outfile f;
	int err;

	if (geteuid() != 0)
		return;
	setup();
	CHECK(chmod(dir, 01777) == 0);
	CHECK(mkfifo(at("leak"), 0666) == 0 && chown(at("leak"), 65534, 65534) == 0);
	/* without SA_RESTART: a blocking open() ends with EINTR after 3 s, a failure */
	sigaction(SIGALRM, &sa, &old);
	alarm(3);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = outfile__open(&f, at("leak"), OUTFILE_DEVICE | OUTFILE_KEEP_OLD, 0600);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
	CHECK(err == -EPERM);
	CHECK(strstr(f.msg, "refusing to write into") &&
	      strstr(f.msg, "a fifo owned by user 65534"));
	CHECK(t1.tv_sec - t0.tv_sec < 2);
	if (!err)
		outfile__free(&f);
	teardown();
}

const struct unit_test outfile_tests[] = {
	{ "outfile: directory moved or removed, temporary removed or moved",
	  test_directory_moved_or_removed },
	{ "outfile: another user's fifo refused before opening it",
	  test_foreign_fifo_refused_at_once },
	{ "outfile: NAME kept as NAME.old", test_keep_old },
	{ "outfile: symlinks refused, never followed", test_refuse_symlinks },
	{ "outfile: unique names never replace", test_unique },
	{ "outfile: directories, discard", test_directory_and_discard },
	{ "outfile: removes only what it wrote", test_removes_only_its_own },
	{ 0 },
};
