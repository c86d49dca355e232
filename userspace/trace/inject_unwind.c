/*
 * The call chain of a stopped thread of the target, for the injector's
 * safe-point check (inject_checks.c): elfutils' libdwfl unwinds it with the
 * call frame information of each module (.eh_frame, .debug_frame), reading
 * its registers and memory through ptrace, as the thread is seized and
 * stopped by us.  libdwfl is already the symbolizer's library, and it
 * unwinds another process's thread with no agent in it; libunwind's ptrace
 * back end would do the same with a second library.
 *
 * The modules are reported, their ELF files opened and their call frame
 * information read before any thread is stopped, so a thread's pause pays
 * only for the unwind itself (0.05-0.2 ms: bench Table 8).
 */
#include "inject_unwind.h"

#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

struct inject_unwinder {
	Dwfl *dwfl;
};

static char *debuginfo_path;
static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .debuginfo_path = &debuginfo_path,
};

/*
 * Open every module's ELF file and read its call frame information now
 * (dwfl_getmodules callback): .eh_frame, and .debug_frame, which may live
 * in a separate debug file to be looked for.
 */
static int open_module(Dwfl_Module *mod, void **user, const char *name, Dwarf_Addr start, void *arg)
{
	Dwarf_Addr bias;

	(void)user, (void)name, (void)start, (void)arg;
	if (dwfl_module_getelf(mod, &bias)) {
		dwfl_module_eh_cfi(mod, &bias);
		dwfl_module_dwarf_cfi(mod, &bias);
	}
	return DWARF_CB_OK;
}

struct inject_unwinder *inject_unwinder_open(pid_t pid)
{
	struct inject_unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->dwfl = dwfl_begin(&callbacks);
	if (!u->dwfl || dwfl_linux_proc_report(u->dwfl, pid) ||
	    dwfl_report_end(u->dwfl, NULL, NULL) || dwfl_linux_proc_attach(u->dwfl, pid, true)) {
		inject_unwinder_close(u);
		return NULL;
	}
	dwfl_getmodules(u->dwfl, open_module, NULL, 0);
	return u;
}

void inject_unwinder_close(struct inject_unwinder *u)
{
	if (!u)
		return;
	if (u->dwfl)
		dwfl_end(u->dwfl);
	free(u);
}

struct chain {
	struct inject_chain *out;
	int max;
};

static int frame_cb(Dwfl_Frame *frame, void *arg)
{
	struct chain *c = arg;
	Dwarf_Addr pc;
	Dwarf_Word sp;
	bool activation;

	if (!dwfl_frame_pc(frame, &pc, &activation))
		return DWARF_CB_ABORT;
	if (c->out->n == c->max)
		return DWARF_CB_ABORT;
	/* A return address points after its call: look up the call. */
	c->out->pc[c->out->n++] = activation ? pc : pc - 1;
	/* x86-64's DWARF register 7 is rsp. */
	if (dwfl_frame_reg(frame, 7, &sp) == 0)
		c->out->last_sp = sp;
	return DWARF_CB_OK;
}

int inject_unwind(struct inject_unwinder *u, pid_t tid, struct inject_chain *out)
{
	struct chain c = {out, INJECT_CHAIN_MAX};

	out->n = 0;
	out->last_sp = 0;
	/* 0: the chain ended at its outermost frame; -1: it stopped short
	 * (no call frame information, a corrupt stack, too deep). */
	out->complete = dwfl_getthread_frames(u->dwfl, tid, frame_cb, &c) == 0;
	return out->n;
}
