/*
 * read_remote and write_remote (userspace/trace/remote.h), the loader's only
 * access to the target's memory, on a real child process.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trace/remote.h"

/* The child keeps its copy of these at the same addresses. */
static char message[64] = "read me from another process";
static volatile uint64_t value = 42;

/* A child that waits for a byte on in, then writes value to out and exits. */
static pid_t child_start(int *to_child, int *from_child)
{
	int down[2], up[2];
	pid_t pid;

	cr_assert_eq(pipe(down), 0);
	cr_assert_eq(pipe(up), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char c;
		uint64_t v;

		close(down[1]);
		close(up[0]);
		if (read(down[0], &c, 1) != 1)
			_exit(1);
		v = value;
		_exit(write(up[1], &v, sizeof(v)) == sizeof(v) ? 0 : 1);
	}
	close(down[0]);
	close(up[1]);
	*to_child = down[1];
	*from_child = up[0];
	return pid;
}

Test(remote, reads_and_writes_another_process)
{
	int to_child, from_child, status;
	char buf[sizeof(message)];
	uint64_t v = 7, seen = 0;
	pid_t pid = child_start(&to_child, &from_child);

	cr_expect_eq(read_remote(pid, (uintptr_t)message, buf, sizeof(buf)), 0);
	cr_expect_str_eq(buf, message);
	cr_expect_eq(write_remote(pid, (uintptr_t)&value, &v, sizeof(v)), 0);
	cr_assert_eq(write(to_child, "x", 1), 1);
	cr_assert_eq(read(from_child, &seen, sizeof(seen)), (ssize_t)sizeof(seen));
	cr_expect_eq(seen, 7, "the child saw %llu", (unsigned long long)seen);
	cr_expect_eq(value, 42, "the write reached this process");
	waitpid(pid, &status, 0);
	close(to_child);
	close(from_child);
}

Test(remote, errors_are_negative_errnos)
{
	long page = sysconf(_SC_PAGESIZE);
	char *two =
	    mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int to_child, from_child, status;
	char buf[16];
	pid_t pid;

	cr_assert_neq(two, MAP_FAILED);
	cr_assert_eq(munmap(two + page, page), 0);
	pid = child_start(&to_child, &from_child);
	/* Unmapped, and a read that runs off the end of a mapping. */
	cr_expect_eq(read_remote(pid, 0, buf, sizeof(buf)), -EFAULT);
	cr_expect_eq(read_remote(pid, (uintptr_t)(two + page - 8), buf, sizeof(buf)), -EIO);
	cr_expect_eq(write_remote(pid, (uintptr_t)(two + page - 8), buf, sizeof(buf)), -EIO);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	/* Reaped: no such process. */
	cr_expect_eq(read_remote(pid, (uintptr_t)message, buf, sizeof(buf)), -ESRCH);
	close(to_child);
	close(from_child);
	munmap(two, page);
}
