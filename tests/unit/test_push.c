// SPDX-License-Identifier: GPL-2.0
/* record --push: its option values, how they combine, and what a cgroup's path says. No root needed. */
#include <errno.h>
#include <stdlib.h>
#include "unit.h"
#include "push/config.h"
#include "push/meta.h"
#include "push/otlp.h"
#include "record/options.h"

static int pids[] = { 42 };
static char *cmd[] = { "true", NULL };

static void test_url(void)
{
	char msg[256];
	char *e;

	CHECK(push_check_url("http://127.0.0.1:4318", msg, sizeof(msg)) == 0);
	CHECK(push_check_url("HTTPS://profiles.example.com/otlp/", msg, sizeof(msg)) == 0);
	CHECK(push_check_url("ftp://h/", msg, sizeof(msg)) == -EINVAL && strstr(msg, "http://"));
	CHECK(push_check_url("http:///x", msg, sizeof(msg)) == -EINVAL && strstr(msg, "no host"));
	CHECK(push_check_url("https://user:pw@h/", msg, sizeof(msg)) == -EINVAL &&
	      strstr(msg, "--push-token-file"));
	CHECK(push_check_url("http://h/x?a=b", msg, sizeof(msg)) == -EINVAL && strstr(msg, "query"));
	CHECK(push_check_url("http://h/a b", msg, sizeof(msg)) == -EINVAL);
	CHECK(push_check_url("http://h/\xc3\xa9", msg, sizeof(msg)) == -EINVAL);
	/* the format's path is added once */
	CHECK_STR(e = push_endpoint("http://h:4318", PUSH_OTLP), "http://h:4318/v1development/profiles");
	free(e);
	CHECK_STR(e = push_endpoint("http://h:4318/", PUSH_OTLP), "http://h:4318/v1development/profiles");
	free(e);
	CHECK_STR(e = push_endpoint("http://h/v1development/profiles", PUSH_OTLP),
		  "http://h/v1development/profiles");
	free(e);
	CHECK_STR(e = push_endpoint("https://h/pyroscope/", PUSH_PYROSCOPE), "https://h/pyroscope/ingest");
	free(e);
	CHECK_STR(e = push_endpoint("https://h/ingest", PUSH_PYROSCOPE), "https://h/ingest");
	free(e);
}

static void test_labels(void)
{
	struct push_opts o;
	char msg[256], v[32];

	push_opts__defaults(&o);
	CHECK(push_opts__add_label(&o, "env=prod", msg, sizeof(msg)) == 0);
	CHECK(push_opts__add_label(&o, "deployment.environment=eu-1:a/b@c+d", msg, sizeof(msg)) == 0);
	CHECK(push_opts__add_label(&o, "env=again", msg, sizeof(msg)) == -EINVAL && strstr(msg, "twice"));
	CHECK(push_opts__add_label(&o, "noequals", msg, sizeof(msg)) == -EINVAL);
	CHECK(push_opts__add_label(&o, "1k=v", msg, sizeof(msg)) == -EINVAL);
	CHECK(push_opts__add_label(&o, "k=", msg, sizeof(msg)) == -EINVAL);
	CHECK(push_opts__add_label(&o, "k=a,b", msg, sizeof(msg)) == -EINVAL);
	CHECK(push_opts__add_label(&o, "k=a}", msg, sizeof(msg)) == -EINVAL);
	CHECK(push_opts__add_label(&o, "k=a b", msg, sizeof(msg)) == -EINVAL);
	CHECK_EQ_U64(o.nr_labels, 2);
	CHECK_STR(o.label_keys[1], "deployment.environment");
	CHECK_STR(o.label_values[1], "eu-1:a/b@c+d");
	push_opts__free(&o);
	CHECK_EQ_U64(o.nr_labels, 0);
	/* what other users named, made a value both formats take */
	push_label_value("web {x=1,y}\n", v, sizeof(v));
	CHECK_STR(v, "web__x_1_y__");
	push_label_value("", v, sizeof(v));
	CHECK_STR(v, "_");
	push_label_value("abcdefghij", v, 5);
	CHECK_STR(v, "abcd");
}

static int check(struct record_opts *o, const char *want)
{
	char msg[256] = "";
	int err = record_opts__validate(o, 2, false, msg, sizeof(msg));

	if (want && (!err || !strstr(msg, want))) {
		fprintf(stderr, "  expected \"%s\", got %d \"%s\"\n", want, err, msg);
		return -1;
	}
	if (!want && err) {
		fprintf(stderr, "  expected success, got \"%s\"\n", msg);
		return -1;
	}
	return 0;
}

static void test_validate(void)
{
	struct record_opts o;

	record_opts__defaults(&o);
	o.push.first_other = "--push-spool";
	o.system_wide = true;
	CHECK(check(&o, "--push-spool needs --push URL") == 0);
	o.push.url = "http://h";
	CHECK(check(&o, NULL) == 0);
	/* each interval a file, with every sample's cgroup */
	CHECK_EQ_U64(o.switch_ns, PUSH_DEFAULT_INTERVAL_NS);
	CHECK(o.all_cgroups);
	o.switch_ns = 0;
	o.system_wide = false;
	CHECK(check(&o, "--push needs -a, -p or -G") == 0);
	o.cgroup = "system.slice";
	CHECK(check(&o, NULL) == 0);
	o.switch_ns = 0;
	o.cgroup = NULL;
	o.pids = pids;
	o.nr_pids = 1;
	o.duration_ns = 1000000000; /* -d: a push of that long */
	CHECK(check(&o, NULL) == 0);
	o.switch_ns = 0;
	o.argv = cmd;
	o.argc = 1;
	o.nr_pids = 0;
	CHECK(check(&o, "not a command or -t") == 0);
	o.argc = 0;
	o.system_wide = true;
	o.output_given = true;
	CHECK(check(&o, "not with -o") == 0);
	o.output_given = false;
	o.switch_max_files = 2;
	CHECK(check(&o, "cuts its own intervals") == 0);
	o.switch_max_files = 0;
	o.threads = 2;
	CHECK(check(&o, "cuts its own intervals") == 0);
	o.threads = 0;
	o.freq = 99;
	CHECK(check(&o, "off-CPU profiles only") == 0);
	o.freq = 0;
	o.critical_path = true; /* its -F 999 comes after push's check */
	CHECK(check(&o, "not with --push") == 0);
	o.critical_path = false;
	o.push.spool_bytes_given = true;
	CHECK(check(&o, "--push-spool-size needs --push-spool") == 0);
	o.push.spool_dir = "/var/lib/offcpu/spool";
	CHECK(check(&o, NULL) == 0);
	o.switch_ns = 0;
	o.nr_pids = 1;
	CHECK(check(&o, "-a cannot be combined with -p") == 0);
}

static void test_cgroup_meta(void)
{
	static const char id[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	struct cgroup_meta m;
	char path[512];

	cgroup_meta("/system.slice/nginx.service", &m);
	CHECK_STR(m.service, "nginx");
	CHECK_STR(m.container, "");
	cgroup_meta("/user.slice/user-1000.slice/user@1000.service/app.slice/foo.service", &m);
	CHECK_STR(m.service, "foo");
	cgroup_meta("/user.slice/user-1000.slice/session-3.scope", &m);
	CHECK_STR(m.service, "");
	snprintf(path, sizeof(path), "/system.slice/docker-%s.scope", id);
	cgroup_meta(path, &m);
	CHECK_STR(m.container, id);
	CHECK_STR(m.service, "");
	snprintf(path, sizeof(path), "/docker/%s", id);
	cgroup_meta(path, &m);
	CHECK_STR(m.container, id);
	snprintf(path, sizeof(path), "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-"
		 "pod1b2c3d4e_0000_1111_2222_333344445555.slice/cri-containerd-%s.scope", id);
	cgroup_meta(path, &m);
	CHECK_STR(m.container, id);
	CHECK_STR(m.pod, "1b2c3d4e-0000-1111-2222-333344445555");
	snprintf(path, sizeof(path), "/kubepods/burstable/pod1b2c3d4e-0000-1111-2222-333344445555/%s", id);
	cgroup_meta(path, &m);
	CHECK_STR(m.pod, "1b2c3d4e-0000-1111-2222-333344445555");
	/* 63 or 65 hex digits are no container's id */
	cgroup_meta("/x/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde.scope", &m);
	CHECK_STR(m.container, "");
	cgroup_meta("/", &m);
	CHECK_STR(m.service, "");
	cgroup_meta("", &m);
	CHECK_STR(m.pod, "");
}

/* A backend's answer: partial_success { rejected_profiles, error_message }, or not. */
static void test_partial_success(void)
{
	static const uint8_t full[] = { 0x0a, 0x09, 0x08, 0x03, 0x12, 0x05, 'o', 'l', 'd', '\n', '!' };
	static const uint8_t warn[] = { 0x0a, 0x04, 0x12, 0x02, 'h', 'i' };
	static const uint8_t empty[] = { 0x0a, 0x00 };
	static const uint8_t other[] = { 0x10, 0x01 }; /* another field only */
	int64_t rej;
	char msg[64];
	size_t n;

	CHECK(otlp__partial_success(full, sizeof(full), &rej, msg, sizeof(msg)) == 0);
	CHECK_EQ_U64(rej, 3);
	CHECK_STR(msg, "old\\n!"); /* escaped: the backend's text goes to a terminal */
	CHECK(otlp__partial_success(warn, sizeof(warn), &rej, msg, sizeof(msg)) == 0);
	CHECK_EQ_U64(rej, 0);
	CHECK_STR(msg, "hi");
	CHECK(otlp__partial_success(empty, sizeof(empty), &rej, msg, sizeof(msg)) == -ENOENT);
	CHECK(otlp__partial_success(other, sizeof(other), &rej, msg, sizeof(msg)) == -ENOENT);
	CHECK(otlp__partial_success(NULL, 0, &rej, msg, sizeof(msg)) == -ENOENT);
	/* cut anywhere: refused, never read past the end */
	for (n = 1; n < sizeof(full); n++) {
		uint8_t *cut = malloc(n);

		memcpy(cut, full, n);
		CHECK(otlp__partial_success(cut, n, &rej, msg, sizeof(msg)) != 0 || n == sizeof(full));
		free(cut);
	}
}

const struct unit_test push_tests[] = {
	{ "push: an OTLP answer's partial success", test_partial_success },
	{ "push: the URL and its endpoint", test_url },
	{ "push: labels", test_labels },
	{ "push: how the options combine", test_validate },
	{ "push: service, container and pod of a cgroup", test_cgroup_meta },
	{ 0 },
};
