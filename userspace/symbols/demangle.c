/*
 * Demangling.  C++ names go through libstdc++'s __cxa_demangle, the
 * Itanium C++ ABI's own entry point: it is in every system that runs C++
 * programs, is kept up to date with the compiler (new mangling rules land
 * there first), and is shared, so a fix reaches the loader without a
 * rebuild.  libiberty's cplus_demangle is the same code but only ships as a
 * static archive, and elfutils has no public demangling call.  The function
 * has C linkage, so this C file declares and calls it directly; the loader
 * links -lstdc++ for it.
 */
#include "demangle.h"

#include <stdlib.h>
#include <string.h>

#include "ocaml_names.h"

/* <cxxabi.h> is C++; the function itself is extern "C". */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *demangle(const char *sym)
{
	const char *at = strchr(sym, '@');

	/* A versioned symbol (__libc_start_main@@GLIBC_2.34): the name alone. */
	if (at && at > sym) {
		char *base = strndup(sym, (size_t)(at - sym)), *d;

		if (!base)
			return NULL;
		d = demangle(base);
		free(base);
		return d;
	}
	if (sym[0] == '_' && sym[1] == 'Z') {
		int status = 0;
		char *d = __cxa_demangle(sym, NULL, NULL, &status);

		if (d && status == 0)
			return d;
		free(d);
	}
	if (!strncmp(sym, "caml", 4)) {
		size_t len = strlen(sym) + 1;
		char *o = malloc(len);

		if (o && ocaml_name(sym, o, len))
			return o;
		free(o);
	}
	return strdup(sym);
}
