/* Real checks: capget(2) on the effective set, sysfs for BTF and uprobes. */
#include "environ_check.h"

#include <linux/capability.h>
#include <stdio.h>
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
