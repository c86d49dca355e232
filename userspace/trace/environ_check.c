/* Real checks: capget(2) on the effective set, sysfs for BTF and uprobes. */
#include "environ_check.h"

#include <errno.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

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

int environ_probe_uprobes(pid_t pid, char *err, size_t errlen)
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
		close(fd);
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
