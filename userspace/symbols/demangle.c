/*
 * Demangling.  C++ names go through libstdc++'s __cxa_demangle, the
 * Itanium C++ ABI's own entry point: it is in every system that runs C++
 * programs, is kept up to date with the compiler (new mangling rules land
 * there first), and is shared, so a fix reaches the loader without a
 * rebuild.  libiberty's cplus_demangle is the same code but only ships as a
 * static archive, and elfutils has no public demangling call.  The function
 * has C linkage, so this C file calls it directly.  libstdc++ is opened the
 * first time a C++ name needs it, not linked: mapped and relocated at
 * start-up it took 0.9 MiB of the loader's RSS for every target, C, OCaml
 * and Python ones included.  Without libstdc++ (never on a system that
 * runs C++), C++ names stay as the binary has them.
 */
#include "demangle.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ocaml_names.h"

/* The C++ runtime demangle() opens (its soname, as every C++ program links it). */
#define DEMANGLE_CXX_RUNTIME "libstdc++.so.6"

/* __cxa_demangle's type (<cxxabi.h> is C++; the function is extern "C"). */
typedef char *(*cxa_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

static pthread_once_t cxa_once = PTHREAD_ONCE_INIT;
static cxa_demangle_fn cxa_demangle; /* NULL: no C++ runtime here */

static void cxa_open(void)
{
	void *h = dlopen(DEMANGLE_CXX_RUNTIME, RTLD_NOW | RTLD_LOCAL);

	if (h)
		cxa_demangle = (cxa_demangle_fn)(uintptr_t)dlsym(h, "__cxa_demangle");
}

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
		char *d;

		pthread_once(&cxa_once, cxa_open);
		d = cxa_demangle ? cxa_demangle(sym, NULL, NULL, &status) : NULL;
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
