// SPDX-License-Identifier: GPL-2.0
/* The output primitive: what it creates, replaces, keeps and refuses. No root needed. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
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

const struct unit_test outfile_tests[] = {
	{ "outfile: NAME kept as NAME.old", test_keep_old },
	{ "outfile: symlinks refused, never followed", test_refuse_symlinks },
	{ "outfile: unique names never replace", test_unique },
	{ "outfile: directories, discard", test_directory_and_discard },
	{ "outfile: removes only what it wrote", test_removes_only_its_own },
	{ 0 },
};
