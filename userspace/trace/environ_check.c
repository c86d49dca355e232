/* Real checks: capget(2) on the effective set, sysfs for BTF and uprobes. */
#include "environ_check.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <linux/types.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memprof_probe_abi.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

#define KERNEL_BTF_PATH "/sys/kernel/btf/vmlinux"
#define UPROBE_PMU_PATH "/sys/bus/event_source/devices/uprobe/type"

static int has_cap(const struct __user_cap_data_struct *d, int cap)
{
	return (d[cap / 32].effective >> (cap % 32)) & 1u;
}

int environ_check_privileges(char *err, size_t errlen)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {0};

	if (syscall(SYS_capget, &hdr, data)) {
		snprintf(err, errlen, "cannot read this process's capabilities");
		return -1;
	}
	if (has_cap(data, CAP_SYS_ADMIN) || (has_cap(data, CAP_BPF) && has_cap(data, CAP_PERFMON)))
		return 0;
	snprintf(err, errlen,
		 "permission denied: needs root, or CAP_BPF and CAP_PERFMON (uid %d has neither)",
		 (int)geteuid());
	return -1;
}

static int effective_caps(struct __user_cap_data_struct *data)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};

	return (int)syscall(SYS_capget, &hdr, data);
}

int environ_probe_uprobes(pid_t pid, int *probe_fd, char *err, size_t errlen)
{
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {0};
	struct perf_event_attr attr;
	int type, fd, e;
	FILE *f = fopen(UPROBE_PMU_PATH, "re");

	if (!f || fscanf(f, "%d", &type) != 1) {
		if (f)
			fclose(f);
		snprintf(err, errlen, "cannot read %s", UPROBE_PMU_PATH);
		return -1;
	}
	fclose(f);
	/*
	 * A uprobe on this loader's own executable, for the target's pid: the
	 * same permission checks as the real attach (uprobe PMU, access to
	 * the target), but the target does not map this file, so nothing is
	 * inserted into it.
	 */
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = (uint32_t)type;
	attr.config1 = (uint64_t)(uintptr_t) "/proc/self/exe";
	attr.config2 = 0;
	fd = (int)syscall(SYS_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0) {
		*probe_fd = fd;
		return 0;
	}
	e = errno;
	if (e == ESRCH) {
		snprintf(err, errlen, "no process with pid %d", (int)pid);
		return -2;
	}
	if (e != EACCES && e != EPERM) {
		snprintf(err, errlen, "this kernel refuses uprobe events (perf_event_open: %s)",
			 strerror(e));
		return -1;
	}
	if (effective_caps(data) == 0 && !has_cap(data, CAP_SYS_ADMIN))
		snprintf(err, errlen,
			 "permission denied: attaching uprobes to process %d needs CAP_SYS_ADMIN "
			 "(this kernel refuses perf_event_open for uprobes with CAP_BPF and "
			 "CAP_PERFMON alone)",
			 (int)pid);
	else if (effective_caps(data) == 0 && !has_cap(data, CAP_SYS_PTRACE))
		snprintf(err, errlen,
			 "permission denied: uprobes on process %d need CAP_SYS_PTRACE (it runs "
			 "with capabilities this loader lacks)",
			 (int)pid);
	else
		snprintf(err, errlen, "permission denied: uprobes on process %d: %s", (int)pid,
			 strerror(e));
	return -1;
}

int environ_check_kernel(char *err, size_t errlen)
{
	if (access(KERNEL_BTF_PATH, R_OK)) {
		snprintf(err, errlen,
			 "this kernel has no BTF (%s missing): CONFIG_DEBUG_INFO_BTF is needed",
			 KERNEL_BTF_PATH);
		return -1;
	}
	if (access(UPROBE_PMU_PATH, R_OK)) {
		snprintf(err, errlen,
			 "this kernel has no uprobe events (%s missing): CONFIG_UPROBE_EVENTS is "
			 "needed",
			 UPROBE_PMU_PATH);
		return -1;
	}
	return 0;
}

/* Up to max bytes of /proc/PID/NAME, malloc'ed and NUL-terminated (*len without it). */
static char *proc_file(pid_t pid, const char *name, size_t max, size_t *len)
{
	char path[64], *buf = malloc(max + 1);
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	f = fopen(path, "re");
	if (!f || !buf) {
		if (f)
			fclose(f);
		free(buf);
		return NULL;
	}
	n = fread(buf, 1, max, f);
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* A CPython: its executable is python*, or it maps a libpython. */
static int is_python(pid_t pid)
{
	char path[64], exe[PATH_MAX], *maps;
	const char *base;
	size_t len;
	ssize_t n;
	int found;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		base = strrchr(exe, '/');
		base = base ? base + 1 : exe;
		if (!strncmp(base, "python", 6))
			return 1;
	}
	maps = proc_file(pid, "maps", 4u << 20, &len);
	found = maps && strstr(maps, "/libpython");
	free(maps);
	return found;
}

/* The Python host (runtime-probes/hosts/python/) sees pymalloc: its frame table is mapped. */
static int python_host_loaded(pid_t pid)
{
	size_t len;
	char *maps = proc_file(pid, "maps", 4u << 20, &len);
	int found = maps && strstr(maps, "/memfd:" MEMPROF_PROBE_PY_TABLE_NAME);

	free(maps);
	return found;
}

int environ_hidden_allocator(pid_t pid, char *note, size_t len)
{
	static const char key[] = "PYTHONMALLOC=";
	const char *value = NULL;
	char *env;
	size_t n;

	if (!is_python(pid) || python_host_loaded(pid))
		return 0;
	env = proc_file(pid, "environ", 1u << 20, &n);
	if (!env)
		return 0;
	for (size_t at = 0; at < n; at += strlen(env + at) + 1)
		if (!strncmp(env + at, key, sizeof(key) - 1))
			value = env + at + sizeof(key) - 1;
	/* Only these two send every allocation to malloc (Python's docs, PYTHONMALLOC). */
	if (value && (!strcmp(value, "malloc") || !strcmp(value, "malloc_debug"))) {
		free(env);
		return 0;
	}
	snprintf(note, len,
		 "note: process %d is a Python running pymalloc (PYTHONMALLOC %s%.40s%s): it "
		 "serves small objects from arenas of its own, which a malloc profiler sees "
		 "only as whole arenas, so most of what it allocates is missing here; start it "
		 "with PYTHONMALLOC=malloc to see every allocation",
		 (int)pid, value ? "is '" : "unset", value ? value : "", value ? "'" : "");
	free(env);
	return 1;
}
