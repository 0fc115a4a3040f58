// SPDX-License-Identifier: GPL-2.0
/*
 * A FUSE file system that stops answering: what a local user can mount (in a
 * user namespace of their own) to make a reader of their files wait forever.
 * For tests/integration/hostile.sh; no libfuse, /dev/fuse spoken directly.
 *
 *   fusehang serve MNT SRC [PIDFILE [UID]]
 *                                      mount at MNT a directory holding one
 *                                      file "f" with SRC's bytes (mode 0755),
 *                                      answer until SIGUSR1, then read every
 *                                      request and answer none; with UID (as
 *                                      root), mounted for user UID and served
 *                                      as that user, as fusermount3 does for
 *                                      a user where /etc/fuse.conf has
 *                                      user_allow_other
 *   fusehang map FILE                  map FILE executable (its pages read
 *                                      in), then block forever: the main
 *                                      thread in pause(), a second thread in
 *                                      a read of a pipe with its stack
 *                                      pointer inside the mapping, and a
 *                                      third in a 20 ms sleep loop (samples)
 *
 * Every attribute and entry is valid for 0 s, so the kernel asks again at
 * each look. Killing the server (any signal but SIGUSR1) aborts the
 * connection: whatever waited gets an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <grp.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t hang;
static unsigned owner_uid; /* of the files */
static char *data;
static size_t data_len;

static void on_usr1(int sig)
{
	(void)sig;
	hang = 1;
}

static void reply(int fd, uint64_t unique, int error, const void *p, size_t len)
{
	static char buf[sizeof(struct fuse_out_header) + (1 << 20)];
	struct fuse_out_header *h = (void *)buf;

	if (len > (1 << 20))
		len = 1 << 20;
	h->len = (uint32_t)(sizeof(*h) + len);
	h->error = error;
	h->unique = unique;
	if (len)
		memcpy(buf + sizeof(*h), p, len);
	if (write(fd, buf, h->len) < 0 && errno != ENOENT)
		perror("fusehang: write");
}

static void fill_attr(struct fuse_attr *a, uint64_t ino)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->nlink = 1;
	a->uid = owner_uid;
	a->gid = owner_uid;
	a->blksize = 4096;
	if (ino == FUSE_ROOT_ID) {
		a->mode = S_IFDIR | 0755;
		a->nlink = 2;
	} else {
		a->mode = S_IFREG | 0755;
		a->size = data_len;
		a->blocks = (data_len + 511) / 512;
	}
}

static int serve(const char *mnt, const char *src, const char *pidfile, const char *user)
{
	unsigned uid = user ? (unsigned)atoi(user) : getuid(), gid = user ? uid : getgid();

	owner_uid = uid;
	static char req[FUSE_MIN_READ_BUFFER + (1 << 20)];
	char opts[256];
	struct stat st;
	int fd, sfd;

	sfd = open(src, O_RDONLY);
	if (sfd < 0 || fstat(sfd, &st)) {
		perror(src);
		return 1;
	}
	data_len = (size_t)st.st_size;
	data = malloc(data_len ? data_len : 1);
	if (!data || read(sfd, data, data_len) != (ssize_t)data_len) {
		perror("fusehang: read");
		return 1;
	}
	close(sfd);
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror("/dev/fuse");
		return 1;
	}
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=%u,group_id=%u,allow_other", fd,
		 uid, gid);
	if (mount("fusehang", mnt, "fuse.fusehang", MS_NOSUID | MS_NODEV, opts)) {
		perror("fusehang: mount");
		return 1;
	}
	signal(SIGUSR1, on_usr1);
	if (pidfile) {
		FILE *f = fopen(pidfile, "w");

		if (f) {
			fprintf(f, "%d\n", (int)getpid());
			fclose(f);
		}
	}
	if (user && (setgroups(0, NULL) || setgid(gid) || setuid(uid))) {
		perror("fusehang: setuid");
		return 1;
	}
	for (;;) {
		ssize_t n = read(fd, req, sizeof(req));
		struct fuse_in_header *in = (void *)req;
		void *arg = req + sizeof(*in);

		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0 && errno == ENODEV)
			return 0; /* unmounted */
		if (n < (ssize_t)sizeof(*in)) {
			perror("fusehang: read request");
			return 1;
		}
		if (hang)
			continue; /* read, never answered */
		switch (in->opcode) {
		case FUSE_INIT: {
			struct fuse_init_out o = { .major = FUSE_KERNEL_VERSION,
						   .minor = FUSE_KERNEL_MINOR_VERSION,
						   .max_readahead = 65536, .max_write = 4096,
						   .max_background = 16, .congestion_threshold = 12,
						   .time_gran = 1 };
			reply(fd, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_LOOKUP: {
			struct fuse_entry_out o = { 0 };

			if (in->nodeid != FUSE_ROOT_ID || strcmp(arg, "f")) {
				reply(fd, in->unique, -ENOENT, NULL, 0);
				break;
			}
			o.nodeid = 2;
			o.generation = 1;
			fill_attr(&o.attr, 2);
			reply(fd, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_GETATTR: {
			struct fuse_attr_out o = { 0 };

			fill_attr(&o.attr, in->nodeid);
			reply(fd, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_OPEN:
		case FUSE_OPENDIR: {
			struct fuse_open_out o = { 0 };

			reply(fd, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_READ: {
			struct fuse_read_in *r = arg;
			size_t len = r->size;

			if (r->offset >= data_len)
				len = 0;
			else if (len > data_len - r->offset)
				len = data_len - r->offset;
			reply(fd, in->unique, 0, data + (len ? r->offset : 0), len);
			break;
		}
		case FUSE_READDIR:
			reply(fd, in->unique, 0, NULL, 0);
			break;
		case FUSE_STATFS: {
			struct fuse_statfs_out o = { .st = { .bsize = 4096, .namelen = 255,
							     .frsize = 4096 } };
			reply(fd, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_FORGET:
		case FUSE_BATCH_FORGET:
		case FUSE_INTERRUPT:
			break; /* no answer is expected */
		case FUSE_RELEASE:
		case FUSE_RELEASEDIR:
		case FUSE_FLUSH:
		case FUSE_ACCESS:
			reply(fd, in->unique, 0, NULL, 0);
			break;
		default:
			reply(fd, in->unique, -ENOSYS, NULL, 0);
		}
	}
}

static char *mapped;
static size_t mapped_len;

/* a read of a pipe nobody writes, with the stack pointer in the FUSE mapping's last page */
static void *stack_in_file(void *arg)
{
	int p[2];
	uint64_t sp = ((uint64_t)(uintptr_t)mapped + mapped_len - 64) & ~15ULL;

	(void)arg;
	if (pipe(p))
		return NULL;
	/* the mapping is read-only: nothing is pushed while sp points there */
	__asm__ volatile("mov %%rsp, %%r12\n\t"
			 "mov %[sp], %%rsp\n\t"
			 "mov %[nr], %%eax\n\t"
			 "mov %[fd], %%edi\n\t"
			 "lea -4096(%%r12), %%rsi\n\t"
			 "mov $1, %%edx\n\t"
			 "syscall\n\t"
			 "mov %%r12, %%rsp"
			 :
			 : [sp] "r"(sp), [nr] "i"(SYS_read), [fd] "r"(p[0])
			 : "rax", "rdi", "rsi", "rdx", "rcx", "r11", "r12", "memory");
	return NULL;
}

static void *sleeper(void *arg)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	(void)arg;
	for (;;)
		nanosleep(&ts, NULL);
	return NULL;
}

static int map(const char *file)
{
	pthread_t a, b;
	struct stat st;
	volatile char sum = 0;
	size_t i;
	int fd = open(file, O_RDONLY);

	if (fd < 0 || fstat(fd, &st)) {
		perror(file);
		return 1;
	}
	mapped_len = (size_t)st.st_size & ~4095UL;
	if (!mapped_len) {
		fprintf(stderr, "fusehang: %s is smaller than a page\n", file);
		return 1;
	}
	mapped = mmap(NULL, mapped_len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (mapped == MAP_FAILED) {
		perror("fusehang: mmap");
		return 1;
	}
	for (i = 0; i < mapped_len; i += 4096)
		sum += mapped[i];
	if (pthread_create(&a, NULL, stack_in_file, NULL) ||
	    pthread_create(&b, NULL, sleeper, NULL)) {
		perror("fusehang: pthread_create");
		return 1;
	}
	/* the pages dropped, from the mapping and the page cache (the server
	 * keeps no cache at an open): a reader of them asks the server again */
	usleep(100 * 1000);
	madvise(mapped, mapped_len, MADV_DONTNEED);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(open(file, O_RDONLY));
	printf("%d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "serve"))
		return serve(argv[2], argv[3], argc > 4 ? argv[4] : NULL, argc > 5 ? argv[5] : NULL);
	if (argc == 3 && !strcmp(argv[1], "map"))
		return map(argv[2]);
	fprintf(stderr, "usage: fusehang serve MNT SRC [PIDFILE [UID]] | fusehang map FILE\n");
	return 2;
}
