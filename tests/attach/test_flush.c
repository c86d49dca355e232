/*
 * Detach gets what the target had queued: the loader asks for a flush
 * (memprof_probe_control's flush_request) and waits for it before it
 * detaches, so deaths a host had seen but not fired yet still count.  The
 * trigger's --hold-events keeps every promotion and death queued until a
 * flush is asked for; without the flush at detach, every short-lived block
 * sampled would stay live.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>

#include "attach_util.h"

/* A short-lived block of the trigger: 4 fields and a header, 40 bytes at
 * rate 1; 64 of them per epoch (tests/attach/progs/trigger.c). */
#define SHORT_BLOCK_BYTES 40
#define EPOCH_BLOCKS 64
/* The trigger writes its file after this many collections' events held. */
#define HELD_EPOCHS 16

Test(flush, detach_gets_the_queued_deaths)
{
	char dir[128], err[256], out[256], held[256], live[256], pid[16];
	const char *targs[] = {"--seconds", "120", "--hold-events", held, NULL};
	struct site_table v;
	pid_t t, l;
	int code;

	tmpdir_make(dir, sizeof(dir));
	cr_assert(dir[0], "mkdtemp failed");
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	snprintf(out, sizeof(out), "%s/trigger.out", dir);
	snprintf(held, sizeof(held), "%s/held", dir);
	snprintf(live, sizeof(live), "%s/live.folded", dir);
	t = trigger_start(dir, out, targs);
	cr_assert_gt(t, 0);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	const char *largs[] = {"attach", pid, "--rate", "1", "--view", "live", "-o", live, NULL};
	l = loader_start_ready(dir, err, largs, &code);
	cr_assert_gt(l, 0, "the loader did not attach (exit %d)", code);
	/* Detach once the trigger holds HELD_EPOCHS collections of deaths. */
	cr_assert_eq(wait_file(held, TEST_EVENT_TIMEOUT_S), 0, "the trigger never held its events");
	kill(l, SIGINT);
	cr_expect_eq(wait_exit(l), 0);
	kill(t, SIGKILL);
	wait_exit(t);
	cr_assert_eq(site_table_read_folded(live, &v), 0, "no %s", live);
	cr_assert_gt(site_value(&v, "site_long_lived", 0), 0, "the live view lacks what lives");
	/*
	 * Short-lived blocks die at the next collection: live at detach are
	 * at most those of the epoch running when the flush was asked for and
	 * of the one that served it.  Without the flush: HELD_EPOCHS epochs
	 * and more.
	 */
	long long short_live = site_value(&v, "site_short_lived", 0);

	cr_expect_leq(short_live, 2 * EPOCH_BLOCKS * SHORT_BLOCK_BYTES,
		      "the deaths queued at detach were lost (%lld short-lived bytes live)",
		      short_live);
}
