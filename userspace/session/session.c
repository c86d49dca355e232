/*
 * The tracing session of attach and top (session.h): start (the machine's
 * checks, scan or inject, load, rate, attach), polls, detach, free.  The
 * options are in session_opts.c, the scan or injection of a target in
 * session_inject.c, what it says on stderr in session_notes.c, what it
 * writes in session_write.c.
 */
#include "session.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "output/profile.h"
#include "trace/control.h"
#include "trace/environ_check.h"
#include "session_internal.h"

/* The target's mappings are re-read every poll. */
#define MAPS_REFRESH_POLLS 1
/* How often the block map is copied (live blocks and their ages). */
#define BLOCKS_READ_POLLS 5
#define ERR_LEN 512

volatile sig_atomic_t session_stop_requested;
static int libbpf_verbose;

/* ---- Signals, libbpf's log ---- */

static void on_signal(int sig)
{
	(void)sig;
	session_stop_requested = 1;
}

void session_signals(void)
{
	struct sigaction sa = {.sa_handler = on_signal};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* A closed pipe on stdout is an output error (EPIPE), not a silent death. */
	signal(SIGPIPE, SIG_IGN);
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	return libbpf_verbose ? vfprintf(stderr, fmt, ap) : 0;
}

/* ---- Attach ---- */

/*
 * Write the requested rate, after checking the control block's magic.  The
 * rate requested before is kept in p, to be put back if the attach fails.
 */
/*
 * A step of the attach failed: its one line, unless the process exited
 * meanwhile, which is then the one thing to say (whatever step noticed).
 * Returns the exit code.
 */
static int attach_fail(const struct traced *p, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int attach_fail(const struct traced *p, int code, const char *fmt, ...)
{
	va_list ap;

	if (proc_exited(p->pid))
		return cli_die(EXIT_TARGET, "process %d exited while being attached", (int)p->pid);
	va_start(ap, fmt);
	cli_vdie(code, fmt, ap);
	va_end(ap);
	return code;
}

static int request_rate(const struct attach_opts *o, struct traced *p)
{
	const struct target *t = &p->t;
	struct memprof_probe_control ctl;
	pid_t pid = t->pid;
	int rc;

	if (!t->control_addr) {
		fprintf(stderr,
			"memprof-bpf: note: no %s symbol in process %d: its rate cannot be set\n",
			MEMPROF_PROBE_CONTROL_SYMBOL, (int)pid);
		return EXIT_OK;
	}
	rc = control_read(pid, t->control_addr, &ctl);
	if (rc)
		return attach_fail(p, rc == -EPERM ? EXIT_DENIED : EXIT_TARGET,
				   "cannot read the control block of process %d: %s", (int)pid,
				   strerror(-rc));
	if (ctl.magic != MEMPROF_PROBE_CONTROL_MAGIC)
		return attach_fail(p, EXIT_TARGET,
				   "process %d: %s has a bad magic (corrupt or foreign)", (int)pid,
				   MEMPROF_PROBE_CONTROL_SYMBOL);
	if (ctl.abi_version != MEMPROF_PROBE_ABI_VERSION)
		return attach_fail(p, EXIT_TARGET,
				   "process %d: probe ABI version %u, this tracer knows %u",
				   (int)pid, ctl.abi_version, MEMPROF_PROBE_ABI_VERSION);
	p->old_rate = ctl.requested_rate;
	rc = control_write_rate(pid, t->control_addr, o->rate);
	p->rate_written = !rc;
	if (rc)
		return attach_fail(p, EXIT_TARGET,
				   "cannot write the requested rate into process %d: %s", (int)pid,
				   strerror(-rc));
	/* The Python host unwinds only as far as the stacks shown need (not written: all). */
	if (t->py_options)
		(void)control_write_py_options(
		    pid, t->py_options,
		    o->names & PROFILE_NAME_NATIVE ? MEMPROF_PROBE_PY_NATIVE : 0);
	return EXIT_OK;
}

/* Once the host has picked up the attach: say what rate is in force. */
static int report_rate(struct session *s, const struct traced *p)
{
	struct memprof_probe_control ctl;

	if (!p->t.control_addr || control_read(p->pid, p->t.control_addr, &ctl) || !ctl.active_rate)
		return 0;
	if (ctl.flags & MEMPROF_PROBE_F_IN_PROCESS)
		session_note(s,
			     "note: an in-process profile is sampling at rate %g; you observe its "
			     "samples at that rate",
			     ctl.active_rate);
	else if (ctl.active_rate != s->o->rate)
		session_note(s,
			     "note: the target samples at rate %g, not the %g asked (another "
			     "tracer asked first); estimates use the rate in force",
			     ctl.active_rate, s->o->rate);
	else if (s->o->verbose)
		session_note(s, "target sampling at rate %g", ctl.active_rate);
	return 1;
}

/*
 * Is a sample semaphore down although this tracer is attached?  The kernel
 * keeps one count per probe and process, not one per tracer: when another
 * tracer of the same process detaches, it lowers the semaphore under us.
 * Attaching again would not help: the kernel still holds this tracer's
 * breakpoint, so it would not raise the semaphore, and unregistering with
 * the semaphore at zero makes it leak the uprobe.
 */
/*
 * The host stopped following blocks it had sampled for us while they were
 * alive (MEMPROF_PROBE_F_FORGOT): no dealloc will come for them.
 */
static int host_forgot_blocks(const struct memprof_probe_control *ctl)
{
	return (ctl->flags & MEMPROF_PROBE_F_FORGOT) != 0;
}

/*
 * An in-process profile (the program's own Gc.Memprof, memprof_start)
 * took sampling over from this tracer while it was attached: the control
 * block said TRACER, and now says IN_PROCESS.  (One already in force at the
 * attach is said by report_rate.)
 */
static int host_taken_over(struct traced *p, const struct memprof_probe_control *ctl)
{
	if (ctl->flags & MEMPROF_PROBE_F_TRACER)
		p->saw_tracer = 1;
	return p->saw_tracer && (ctl->flags & MEMPROF_PROBE_F_IN_PROCESS);
}

static int semaphore_lost(const struct target *t)
{
	for (size_t i = 0; i < t->n_files; i++) {
		unsigned short v;

		if (t->files[i].sample_semaphore &&
		    !semaphore_read(t->pid, t->files[i].sample_semaphore, &v) && v == 0)
			return 1;
	}
	return 0;
}

static void refresh_maps(pid_t pid, struct symbolizer *sym)
{
	struct proc_maps maps;

	if (proc_maps_read(pid, &maps))
		return;
	/* A process that exited meanwhile shows no mappings: keep the last ones. */
	if (maps.n)
		symbolizer_set_maps(sym, &maps);
	else
		proc_maps_free(&maps);
}

/* A stop signal came while p was being attached: say so (with what the
 * injector said, if it was interrupted).  SESSION_INTERRUPTED. */
static int attach_interrupted(const struct traced *p, const char *why)
{
	fprintf(stderr,
		"memprof-bpf: interrupted while attaching process %d: nothing traced, no output "
		"written%s%s\n",
		(int)p->pid, why ? "; " : "", why ? why : "");
	return SESSION_INTERRUPTED;
}

/* The block map's home slots for process pid: the whole --max-blocks when
 * it was given, else sized from its resident memory (tracer_home_slots);
 * 0 if that cannot be read (the default size). */
static uint32_t home_slots_of(const struct attach_opts *o, pid_t pid)
{
	char path[64];
	unsigned long long size, resident;
	FILE *f;
	int n;

	if (o->max_blocks)
		return o->max_blocks;
	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fscanf(f, "%llu %llu", &size, &resident);
	fclose(f);
	if (n != 2)
		return 0;
	return tracer_home_slots(resident * (uint64_t)sysconf(_SC_PAGESIZE), o->rate);
}

static int attach_one(struct session *s, struct traced *p)
{
	char err[ERR_LEN];
	int ts; /* session_scan_or_inject: a target_status or TARGET_INJECT_* */
	int code;

	if (kill(p->pid, 0) && errno == ESRCH)
		return cli_die(EXIT_TARGET, "no process with pid %d", (int)p->pid);
	/*
	 * Uprobe events are bound to a process through its main thread: once
	 * that has exited (a zombie whose other threads run on), the kernel
	 * fires them nowhere and raises no semaphore.  Say so, untouched.
	 */
	if (proc_live_tid(p->pid) != p->pid)
		return cli_die(EXIT_TARGET,
			       "process %d: its main thread has exited while its other threads run "
			       "on; uprobes cannot follow such a process: not attaching",
			       (int)p->pid);
	/*
	 * The rights the attach needs, probed before the target is touched
	 * (no injection, no rate written): CAP_BPF and CAP_PERFMON pass the
	 * capability check, but some kernels refuse uprobe events without
	 * CAP_SYS_ADMIN.  A kernel thread has no probes to be refused.
	 */
	if (!proc_is_kernel_thread(p->pid)) {
		int probe = environ_probe_uprobes(p->pid, &p->probe_fd, err, sizeof(err));

		if (probe)
			return attach_fail(p, probe == -2 ? EXIT_TARGET : EXIT_DENIED, "%s", err);
	}
	p->sym = symbolizer_new();
	if (!p->sym)
		return cli_die(EXIT_FAILED, "out of memory");
	ts = session_scan_or_inject(s->o, p, err, sizeof(err));
	/* A stop signal during the start: no BPF object is loaded for nothing. */
	if (session_stop_requested)
		return attach_interrupted(p, ts == TARGET_OK ? NULL : err);
	switch (ts) {
	case TARGET_OK:
		break;
	case TARGET_INJECT_FAILED:
		return attach_fail(p, EXIT_TARGET, "%s", err);
	case TARGET_INJECT_DENIED:
	case TARGET_NO_ACCESS:
		return attach_fail(p, EXIT_DENIED, "%s", err);
	case TARGET_ERROR:
		return attach_fail(p, EXIT_FAILED, "%s", err);
	default:
		return attach_fail(p, EXIT_TARGET, "%s", err);
	}
	profile_process_name(p->pid, p->name, sizeof(p->name));
	/* The BPF object first: a failure to load it leaves the target as it was. */
	p->opened = 1;
	switch (tracer_open(&p->tr, &p->t, s->o->max_blocks, home_slots_of(s->o, p->pid),
			    s->o->max_stacks, s->o->verbose, err, sizeof(err))) {
	case TRACER_OK:
		break;
	case TRACER_DENIED:
		return attach_fail(p, EXIT_DENIED, "%s", err);
	default:
		return attach_fail(p, EXIT_FAILED, "%s", err);
	}
	if (session_stop_requested)
		return attach_interrupted(p, NULL);
	code = request_rate(s->o, p);
	if (code)
		return code;
	if (tracer_attach(&p->tr, &p->t, err, sizeof(err)) != TRACER_OK)
		return attach_fail(p, EXIT_FAILED, "%s", err);
	if (s->o->verbose) {
		char costs[1024], maps[512];
		uint64_t mem = tracer_map_memory(&p->tr, maps, sizeof(maps));

		tracer_describe_costs(&p->tr, costs, sizeof(costs));
		fprintf(stderr, "memprof-bpf: attached to %zu probe file(s) of process %d\n",
			p->t.n_files, (int)p->pid);
		fprintf(stderr, "memprof-bpf: start-up: %s\n", costs);
		fprintf(stderr, "memprof-bpf: maps: %.1f MiB of kernel memory (%s)\n",
			mem / 1048576.0, maps);
	}
	return EXIT_OK;
}

/* After a failed start: put back the rates requested before this tracer. */
static void restore_rates(const struct session *s)
{
	for (int i = 0; i < s->n; i++) {
		const struct traced *p = &s->procs[i];

		if (p->rate_written && control_write_rate(p->pid, p->t.control_addr, p->old_rate) &&
		    s->o->verbose)
			fprintf(stderr,
				"memprof-bpf: cannot restore the rate requested of process %d\n",
				(int)p->pid);
	}
}

/*
 * --ready-file, before the targets are touched: the old file removed (a
 * script must never see the ready file of an earlier run) and its
 * temporary twin created beside it, so that a bad path fails now.  The
 * temporary's descriptor, or -1 after the one-line message.
 */
static int ready_file_prepare(const char *path, char *tmp, size_t len)
{
	int fd;

	if (unlink(path) && errno != ENOENT)
		return cli_die(EXIT_FAILED, "cannot replace %s: %s", path, strerror(errno)), -1;
	snprintf(tmp, len, "%s.%d.tmp", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return cli_die(EXIT_FAILED, "cannot write %s: %s", path, strerror(errno)), -1;
	return fd;
}

/* The traced PIDs into the temporary, renamed to path.  EXIT_OK or EXIT_FAILED. */
static int ready_file_publish(const struct session *s, int fd, const char *tmp, const char *path)
{
	FILE *f = fdopen(fd, "w");
	int bad = !f;

	for (int i = 0; f && i < s->n; i++)
		bad |= fprintf(f, "%d\n", (int)s->procs[i].pid) < 0;
	bad |= f ? fclose(f) != 0 : close(fd) != 0;
	if (!bad && !rename(tmp, path))
		return EXIT_OK;
	cli_die(EXIT_FAILED, "cannot write %s: %s", path, strerror(errno));
	unlink(tmp);
	return EXIT_FAILED;
}

int session_open(struct session *s, const struct attach_opts *o, struct output_request *r,
		 struct output_files *files, int with_stdout)
{
	char ready_tmp[PATH_MAX];
	int code, ready_fd = -1;

	r->n_paths = o->n_out;
	r->format = o->format;
	memcpy(r->paths, o->out_paths, sizeof(r->paths));
	code = output_files_open(files, r, with_stdout);
	if (code)
		return code;
	r->files = files;
	if (o->ready_file) {
		ready_fd = ready_file_prepare(o->ready_file, ready_tmp, sizeof(ready_tmp));
		if (ready_fd < 0) {
			output_files_close(files);
			return EXIT_FAILED;
		}
	}
	session_signals();
	code = session_start(s, o);
	if (!code && ready_fd >= 0) {
		code = ready_file_publish(s, ready_fd, ready_tmp, o->ready_file);
		if (code) {
			session_detach(s);
			session_free(s);
		}
	} else if (ready_fd >= 0) {
		close(ready_fd);
		unlink(ready_tmp);
	}
	if (code)
		output_files_close(files);
	return code;
}

int session_start(struct session *s, const struct attach_opts *o)
{
	char err[ERR_LEN];
	int code = EXIT_OK;

	memset(s, 0, sizeof(*s));
	s->o = o;
	libbpf_verbose = o->verbose;
	libbpf_set_print(libbpf_log);
	/* A pid that does not exist is the first thing to say. */
	for (int i = 0; i < o->n_pids; i++)
		if (kill(o->pids[i], 0) && errno == ESRCH)
			return cli_die(EXIT_TARGET, "no process with pid %d", (int)o->pids[i]);
	if (environ_check_privileges(err, sizeof(err)) || environ_check_kernel(err, sizeof(err)))
		return cli_die(EXIT_DENIED, "%s", err);
	for (int i = 0; i < o->n_pids && !code; i++) {
		s->procs[i].pid = o->pids[i];
		s->n = i + 1;
		code = attach_one(s, &s->procs[i]);
	}
	if (code) {
		session_detach(s);
		restore_rates(s);
		session_free(s);
		return code;
	}
	clock_gettime(CLOCK_REALTIME, &s->start);
	s->start_mono = session_now();
	for (int i = 0; i < s->n; i++) {
		char state;

		proc_state(s->procs[i].pid, &state, &s->procs[i].all_cpu0);
		proc_program_cpu(s->procs[i].pid, &s->procs[i].cpu0);
		if (environ_hidden_allocator(s->procs[i].pid, err, sizeof(err)))
			session_note(s, "%s", err);
	}
	if (o->timeline_path && timeline_init(&s->tl, session_mono_ns(),
					      SESSION_POLL_MS * 1000000LL, TIMELINE_MAX_POINTS))
		session_note(s, "note: out of memory: no timeline");
	peak_init(&s->peak, session_mono_ns());
	peak_init(&s->snap_peak, session_mono_ns());
	session_read_live(s, 1);
	return EXIT_OK;
}

/* What the target does while traced, to explain an empty profile. */
static void seen_poll(struct traced *p)
{
	struct memprof_probe_control ctl;
	char state;
	double cpu;

	p->polls++;
	if (!proc_state(p->pid, &state, &cpu) && (state == 'T' || state == 't'))
		p->stopped_polls++;
	if (p->t.control_addr && !control_read(p->pid, p->t.control_addr, &ctl) &&
	    ctl.active_rate) {
		p->took_attach = 1;
		p->active_rate = ctl.active_rate;
	}
}

int session_poll(struct session *s, unsigned poll)
{
	int alive = 0;

	for (int i = 0; i < s->n; i++) {
		struct traced *p = &s->procs[i];

		if (p->exited)
			continue;
		if (proc_exited(p->pid)) {
			p->exited = 1;
			p->exit_ns = (uint64_t)session_mono_ns();
			if (s->n > 1)
				session_note(s, "note: process %d exited; its profile is kept",
					     (int)p->pid);
			continue;
		}
		alive++;
		seen_poll(p);
		if (!p->rate_reported)
			p->rate_reported = report_rate(s, p);
		if (!p->lost_noted && semaphore_lost(&p->t) && !proc_exited(p->pid)) {
			p->lost_noted = 1;
			session_note(
			    s,
			    "note: process %d's memprof sample semaphore dropped while this "
			    "tracer was attached (another tracer of it detached?): it "
			    "stopped sampling; the output covers the time before",
			    (int)p->pid);
		}
		struct memprof_probe_control ctl;
		int ctl_ok = p->t.control_addr && !control_read(p->pid, p->t.control_addr, &ctl);

		if (ctl_ok && !p->taken_over_noted && host_taken_over(p, &ctl)) {
			p->taken_over_noted = 1;
			session_note(
			    s,
			    "note: process %d's own profile took sampling over at rate %g: "
			    "from now on this tracer sees that profile's samples, at its "
			    "rate",
			    (int)p->pid, ctl.active_rate);
		}
		if (ctl_ok && !p->forgot_noted && host_forgot_blocks(&ctl)) {
			p->forgot_noted = 1;
			session_note(
			    s,
			    "note: process %d stopped following blocks it had sampled for "
			    "this tracer while they were alive (an in-process profile took "
			    "over or stopped): no death will be seen for them, so the live "
			    "view counts them as still alive",
			    (int)p->pid);
		}
		if (poll % BLOCKS_READ_POLLS == 0 && tracer_read_blocks(&p->tr) && s->o->verbose)
			session_note(s, "cannot read the block map: %s", strerror(errno));
		if (poll % MAPS_REFRESH_POLLS == 0)
			refresh_maps(p->pid, p->sym);
		int rc = tracer_sync(&p->tr);

		if (rc && s->o->verbose)
			session_note(s, "cannot map the stack table: %s", strerror(-rc));
	}
	session_read_live(s, 0);
	return alive;
}

void session_grow(struct session *s)
{
	for (int i = 0; i < s->n; i++) {
		struct traced *p = &s->procs[i];

		if (p->opened && p->tr.skel && !p->exited)
			tracer_sync(&p->tr); /* a failure is said at the next poll */
	}
}

/*
 * How long detach waits for the targets to hand over their queued events:
 * while some target that has not served its request still uses CPU time
 * (it will reach a poll), up to FLUSH_WAIT_MAX_S; FLUSH_IDLE_S after they
 * all stopped using any (idle: they would not poll before long).  A busy
 * target on a loaded machine may take more than a fraction of a second.
 */
#define FLUSH_WAIT_MAX_S 3.0
#define FLUSH_IDLE_S 0.2

/* The CPU time of the targets still waited for (seq[i] != 0). */
static double waited_cpu(const struct session *s, const uint64_t *seq)
{
	double sum = 0;

	for (int i = 0; i < s->n; i++) {
		char state;
		double cpu;

		if (seq[i] && !proc_state(s->procs[i].pid, &state, &cpu))
			sum += cpu;
	}
	return sum;
}

/*
 * Ask every live target for the promote/dealloc events it has queued
 * (memprof_probe_abi.h, flush_request) and wait until each served it (see
 * FLUSH_WAIT_MAX_S): a target that does not poll meanwhile (idle, or a
 * host without queues) keeps them, as it would have kept them after detach.
 */
static void request_flushes(struct session *s)
{
	uint64_t seq[SESSION_MAX_PIDS];
	int waiting = 0;
	double start = session_now(), progress_at = start, cpu;

	for (int i = 0; i < s->n; i++) {
		struct traced *p = &s->procs[i];

		seq[i] = 0;
		if (p->opened && !p->exited && p->t.control_addr &&
		    !control_request_flush(p->pid, p->t.control_addr, &seq[i]))
			waiting++;
		else
			seq[i] = 0;
	}
	cpu = waited_cpu(s, seq);
	while (waiting && session_now() < start + FLUSH_WAIT_MAX_S &&
	       session_now() < progress_at + FLUSH_IDLE_S) {
		const struct timespec pause = {0, 2000000};
		double now_cpu;

		nanosleep(&pause, NULL);
		waiting = 0;
		for (int i = 0; i < s->n; i++) {
			if (seq[i] && control_flushed(s->procs[i].pid, s->procs[i].t.control_addr,
						      seq[i]) == 0)
				waiting++;
			else
				seq[i] = 0;
		}
		now_cpu = waited_cpu(s, seq);
		if (now_cpu > cpu)
			progress_at = session_now();
		cpu = now_cpu;
	}
}

void session_detach(struct session *s)
{
	double seconds = session_now() - s->start_mono;

	session_progress_clear(s);
	if (s->detached)
		return;
	request_flushes(s);
	for (int i = 0; i < s->n; i++)
		if (s->procs[i].opened && s->procs[i].tr.skel)
			tracer_sync(&s->procs[i].tr); /* a failure is said below */
	session_read_live(s, 1); /* the last reading: live memory when sampling stops */
	s->detached = 1;
	for (int i = 0; i < s->n; i++) {
		struct traced *p = &s->procs[i];
		char state;
		double cpu, all;

		if (p->exited || proc_program_cpu(p->pid, &cpu))
			continue;
		p->cpu_s = cpu - p->cpu0;
		/* A program thread that ended took its time out of the sum: the
		 * whole process's (ticks, host threads in) says what ran. */
		if (p->cpu_s < 0 && !proc_state(p->pid, &state, &all))
			p->cpu_s = all - p->all_cpu0;
	}
	for (int i = 0; i < s->n; i++)
		if (s->procs[i].opened)
			tracer_detach(&s->procs[i].tr); /* the views stop changing */
	for (int i = 0; i < s->n; i++) {
		struct traced *p = &s->procs[i];

		if (!p->opened || !p->tr.skel)
			continue;
		/* Only a session that started collected anything. */
		if (s->start_mono && s->n == 1 && (p->exited || proc_exited(p->pid)))
			fprintf(
			    stderr,
			    "memprof-bpf: note: process %d exited; writing what was collected\n",
			    (int)p->pid);
		else if (s->start_mono && !p->exited &&
			 !tracer_counter(&p->tr, MEMPROF_CNT_SAMPLES))
			session_note_empty(s, p, seconds);
		uint64_t t0 = (uint64_t)session_mono_ns();

		int rc;

		tracer_read_blocks(&p->tr);
		if ((rc = tracer_sync(&p->tr)))
			fprintf(stderr,
				"memprof-bpf: cannot map the stack table of process %d: %s "
				"(the profile has the stacks mapped before)\n",
				(int)p->pid, strerror(-rc));
		if (s->o->verbose) {
			char maps[512];
			uint64_t mem = tracer_map_memory(&p->tr, maps, sizeof(maps));

			fprintf(stderr,
				"memprof-bpf: stop: block map of process %d read in "
				"%.1f ms; maps hold %.1f MiB of kernel memory (%s)\n",
				(int)p->pid, ((uint64_t)session_mono_ns() - t0) / 1e6,
				mem / 1048576.0, maps);
			if (tracer_describe_run_times(&p->tr, maps, sizeof(maps)))
				fprintf(stderr,
					"memprof-bpf: stop: BPF run time in process %d "
					"(kernel.bpf_stats_enabled): %s\n",
					(int)p->pid, maps);
		}
	}
}

void session_free(struct session *s)
{
	for (int i = 0; i < s->n; i++) {
		struct traced *p = &s->procs[i];

		if (p->opened)
			tracer_close(&p->tr);
		if (p->probe_fd > 0)
			close(p->probe_fd);
		target_free(&p->t);
		if (p->sym)
			symbolizer_free(p->sym);
		free(p->snap_prev);
	}
	timeline_free(&s->tl);
	peak_free(&s->peak);
	peak_free(&s->snap_peak);
	s->n = 0;
}
