/* memprof-bpf's error cases: one line on stderr and the documented code. */
#include <criterion/criterion.h>
#include <elf.h>
#include <stdint.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attach_util.h"
#include "exit_codes.h"

#define NOBODY 65534

static char dir[128], err[192];

static void setup(void)
{
	tmpdir_make(dir, sizeof(dir));
	snprintf(err, sizeof(err), "%s/loader.err", dir);
}

static void expect_one_line(const char *needle)
{
	cr_expect_eq(file_lines(err), 1, "stderr is not one line");
	cr_expect(file_contains(err, needle), "stderr lacks '%s'", needle);
}

/* A pid that existed and was reaped: nobody has it now. */
static pid_t dead_pid(void)
{
	pid_t p = fork();

	if (p == 0)
		_exit(0);
	wait_exit(p);
	return p;
}

Test(attach_errors, unknown_pid, .init = setup)
{
	char pid[16];

	snprintf(pid, sizeof(pid), "%d", (int)dead_pid());
	const char *args[] = {"attach", pid, NULL};
	cr_expect_eq(loader_run(err, args), EXIT_TARGET);
	expect_one_line("no process");
}

Test(attach_errors, bad_usage, .init = setup)
{
	const char *no_pid[] = {"attach", NULL};
	const char *bad_rate[] = {"attach", "1", "--rate", "2", NULL};
	const char *bad_view[] = {"attach", "1", "--view", "nope", NULL};

	cr_expect_eq(loader_run(err, no_pid), EXIT_USAGE);
	cr_expect_eq(loader_run(err, bad_rate), EXIT_USAGE);
	expect_one_line("bad rate");
	cr_expect_eq(loader_run(err, bad_view), EXIT_USAGE);
	expect_one_line("unknown view");
}

Test(attach_errors, process_without_probes, .init = setup)
{
	char *argv[] = {"/bin/sleep", "30", NULL}, pid[16];
	pid_t s = spawn(argv, NULL, NULL);

	cr_assert_gt(s, 0);
	cr_assert_eq(wait_exec(s, argv[0]), 0, "sleep did not start");
	snprintf(pid, sizeof(pid), "%d", (int)s);
	/* Without --no-inject the loader would load the malloc host into it
	 * (tests/inject/). */
	const char *args[] = {"attach", pid, "--no-inject", NULL};
	cr_expect_eq(loader_run(err, args), EXIT_TARGET);
	kill(s, SIGKILL);
	wait_exit(s);
	expect_one_line("no memprof probes");
}

Test(attach_errors, not_root, .init = setup)
{
	const char *targs[] = {"--seconds", "30", NULL};
	char out[256], pid[16];
	pid_t t, c;

	snprintf(out, sizeof(out), "%s/trigger.out", dir);
	t = trigger_start(dir, out, targs);
	cr_assert_gt(t, 0);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	c = fork();
	if (c == 0) {
		int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(fd, STDERR_FILENO);
		if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(99);
		execl(LOADER_BIN, LOADER_BIN, "attach", pid, (char *)NULL);
		_exit(98);
	}
	cr_expect_eq(wait_exit(c), EXIT_DENIED);
	kill(t, SIGTERM);
	wait_exit(t);
	expect_one_line("permission denied");
}

Test(attach_errors, truncated_elf_in_the_maps, .init = setup)
{
	char copy[256], cmd[600], out[256], pid[16];
	struct stat st;
	pid_t t;

	snprintf(copy, sizeof(copy), "%s/truncated-trigger", dir);
	snprintf(out, sizeof(out), "%s/trigger.out", dir);
	cr_assert_eq(stat(TRIGGER_BIN, &st), 0);
	snprintf(cmd, sizeof(cmd), "cp %s %s && truncate -s %lld %s", TRIGGER_BIN, copy,
		 (long long)st.st_size / 2, copy);
	cr_assert_eq(system(cmd), 0);
	const char *targs[] = {"--seconds", "30", "--map", copy, NULL};
	t = trigger_start(dir, out, targs);
	cr_assert_gt(t, 0);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	const char *args[] = {"attach", pid, NULL};
	cr_expect_eq(loader_run(err, args), EXIT_TARGET);
	kill(t, SIGTERM);
	wait_exit(t);
	expect_one_line("truncated ELF");
}

/*
 * A copy of the trigger whose .note.stapsdt is spoiled by `spoil` (given
 * the section's bytes and size), mapped by the trigger: exit 2, one line
 * holding `why`.  Before, a note past the section's end hid the probes
 * (the loader injected the malloc host), and unreadable arguments ended in
 * libbpf's attach error (exit 4).
 */
static void corrupt_note(void (*spoil)(unsigned char *note, size_t size), const char *why)
{
	char copy[256], out[256], pid[16];
	int fd;
	struct stat st;
	pid_t t;

	snprintf(copy, sizeof(copy), "%s/note-trigger", dir);
	snprintf(out, sizeof(out), "%s/trigger.out", dir);
	unsigned char *elf = (unsigned char *)read_file(TRIGGER_BIN);
	cr_assert_not_null(elf);
	cr_assert_eq(stat(TRIGGER_BIN, &st), 0);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)elf;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(elf + eh->e_shoff);
	const char *names = (const char *)elf + sh[eh->e_shstrndx].sh_offset;
	int found = 0;
	for (int i = 0; i < eh->e_shnum; i++)
		if (!strcmp(names + sh[i].sh_name, ".note.stapsdt")) {
			spoil(elf + sh[i].sh_offset, sh[i].sh_size);
			found = 1;
		}
	cr_assert(found, "the trigger has no .note.stapsdt");
	fd = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	cr_assert_eq(write(fd, elf, (size_t)st.st_size), st.st_size);
	close(fd);
	free(elf);
	const char *targs[] = {"--seconds", "30", "--map", copy, NULL};
	t = trigger_start(dir, out, targs);
	cr_assert_gt(t, 0);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	const char *args[] = {"attach", pid, "-d", "1", NULL};
	cr_expect_eq(loader_run(err, args), EXIT_TARGET);
	kill(t, SIGTERM);
	wait_exit(t);
	expect_one_line(why);
}

/* The first note claims more bytes than the section holds. */
static void note_too_long(unsigned char *note, size_t size)
{
	uint32_t descsz = (uint32_t)size * 4;

	memcpy(note + 4, &descsz, sizeof(descsz));
}

/* The first argument of each memprof probe is not one a tracer can read. */
static void unreadable_args(unsigned char *note, size_t size)
{
	for (size_t i = 0; i + 1 < size; i++)
		if (note[i] == '@' && note[i + 1] == '%')
			note[i + 1] = '@';
}

Test(attach_errors, a_stapsdt_note_past_its_section, .init = setup)
{
	corrupt_note(note_too_long, "runs past the section's end");
}

Test(attach_errors, unreadable_probe_arguments, .init = setup)
{
	corrupt_note(unreadable_args, "cannot be read");
}
