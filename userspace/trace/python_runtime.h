/*
 * Which CPython a process runs, read from the ELF files it maps: the
 * executable (Debian's python3, or an embedding program linked with
 * -Wl,-E) or a libpython shared object, whatever they are called.  A
 * CPython is recognised by PyMem_SetAllocator in a dynamic symbol table
 * (what the Python host needs, docs/python-host.md); its version is the
 * value of Py_Version (3.11 and later), read from the file.
 */
#ifndef MEMPROF_PYTHON_RUNTIME_H
#define MEMPROF_PYTHON_RUNTIME_H

#include <limits.h>
#include <sys/types.h>

/* The library the loader injects into a CPython it supports. */
#define PYTHON_HOST_LIB "libmemprof-python.so"

struct python_runtime {
	int found;		 /* a CPython: PyMem_SetAllocator exported */
	int major, minor, micro; /* -1 when the version is unknown (no Py_Version) */
	char path[PATH_MAX];	 /* the file that exports it, as mapped */
};

/* The CPython of process pid, if any.  0, or -1 (its maps are unreadable). */
int python_runtime_of_pid(pid_t pid, struct python_runtime *out);

/*
 * Why the Python host cannot profile py, in one line into why (a version
 * other than 3.11, or an unknown one): 1, or 0 when it can (or py is no
 * CPython).
 */
int python_runtime_refusal(pid_t pid, const struct python_runtime *py, char *why, size_t len);

/* Whether the Python host is the library to inject into py. */
int python_runtime_supported(const struct python_runtime *py);

#endif
