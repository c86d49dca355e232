/* The allocation site of a stack (site.h). */
#include "site.h"

#include <string.h>

/*
 * Frames of the allocator, of the C++ standard library (containers,
 * allocators), and the allocation wrappers of common runtimes and
 * libraries: the site is the innermost frame past them, the code that
 * asked for the memory.  A name matches an entry when it is the entry,
 * or the entry followed by its arguments or template arguments ('(', '<',
 * '['); an entry ending in ':' or '_' matches every name it starts.
 */
static const char *const allocator_names[] = {
    /* C library */
    "malloc",
    "calloc",
    "realloc",
    "reallocarray",
    "posix_memalign",
    "aligned_alloc",
    "memalign",
    "valloc",
    "pvalloc",
    "free",
    "strdup",
    "strndup",
    "__strdup",
    "__strndup",
    "__libc_malloc",
    "__libc_calloc",
    "__libc_realloc",
    "__libc_memalign",
    /* C++ */
    "operator new",
    "std::",
    "__gnu_cxx::",
    /* GNU and git style x-wrappers */
    "xmalloc",
    "xcalloc",
    "xrealloc",
    "xmallocz",
    "xstrdup",
    "xstrndup",
    "xmemdupz",
    "do_xmalloc",
    "do_xmallocz",
    "xzalloc",
    "xnmalloc",
    "xmemdup",
    /* GLib */
    "g_malloc",
    "g_malloc0",
    "g_realloc",
    "g_malloc_n",
    "g_malloc0_n",
    "g_realloc_n",
    "g_try_malloc",
    "g_try_malloc0",
    "g_try_realloc",
    "g_slice_alloc",
    "g_slice_alloc0",
    "g_strdup",
    "g_strndup",
    "g_memdup",
    "g_memdup2",
    /* CPython */
    "PyMem_",
    "_PyMem_",
    "PyObject_Malloc",
    "PyObject_Calloc",
    "PyObject_Realloc",
    "_PyObject_Malloc",
    "_PyObject_Calloc",
    "_PyObject_Realloc",
    "pymalloc_alloc",
    "pymalloc_realloc",
    "_PyObject_MallocWithType",
    /* Perl */
    "Perl_safesysmalloc",
    "Perl_safesyscalloc",
    "Perl_safesysrealloc",
    /* SQLite */
    "sqlite3Malloc",
    "sqlite3MallocZero",
    "sqlite3MemMalloc",
    "sqlite3MemRealloc",
    "sqlite3Realloc",
    "sqlite3DbMallocRaw",
    "sqlite3DbMallocRawNN",
    "sqlite3DbMallocZero",
    "sqlite3DbRealloc",
    "sqlite3DbReallocOrFree",
    "sqlite3_malloc",
    "sqlite3_malloc64",
    "sqlite3_realloc",
    "sqlite3_realloc64",
    "dbMallocRawFinish",
    "mallocWithAlarm",
    /* LLVM */
    "llvm::safe_malloc",
    "llvm::safe_calloc",
    "llvm::safe_realloc",
    "llvm::allocate_buffer",
};

int site_allocator_frame(const char *name)
{
	/* A function template's name starts with its return type. */
	if (!strncmp(name, "void ", 5))
		name += 5;
	for (size_t i = 0; i < sizeof(allocator_names) / sizeof(allocator_names[0]); i++) {
		const char *a = allocator_names[i];
		size_t n = strlen(a);

		if (!strncmp(name, a, n) &&
		    (a[n - 1] == ':' || a[n - 1] == '_' || name[n] == '\0' || name[n] == '(' ||
		     name[n] == '<' || name[n] == '['))
			return 1;
	}
	return 0;
}

const char *site_of_stack(const struct profile_stack *s)
{
	const char *names[PROFILE_MAX_NAMES];
	size_t n = profile_stack_names(s, names, PROFILE_MAX_NAMES);

	return site_of_names(names, n);
}

const char *site_of_names(const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!site_allocator_frame(names[i]))
			return names[i];
	return n ? names[0] : "";
}
