/*
 * OCaml (4.x, no flambda) names a function caml<Unit>__<name>_<stamp>:
 * the compilation unit's module path with "__" between the modules of a
 * packed or dune-wrapped unit, the function's name with characters that
 * are not identifier characters written $XX (hex), and a stamp that makes
 * it unique.  Module initialisers are caml<Unit>__entry, without a stamp.
 * OCaml 5.x writes a '.' between the unit and the function instead:
 * caml<Unit>.<name>_<stamp>, caml<Unit>.entry.
 */
#include "ocaml_names.h"

#include <ctype.h>
#include <string.h>

struct out {
	char *buf;
	size_t len, at;
};

static void put(struct out *o, char c)
{
	if (o->at + 1 < o->len)
		o->buf[o->at++] = c;
}

static int hexval(char c);
static size_t strip_stamp(const char *name, size_t n);

/* The function part f: stamp stripped, $XX escapes decoded. */
static void put_function(struct out *o, const char *f)
{
	size_t n = strip_stamp(f, strlen(f));

	for (size_t i = 0; i < n; i++) {
		int hi, lo;

		if (f[i] == '$' && i + 2 < n && (hi = hexval(f[i + 1])) >= 0 &&
		    (lo = hexval(f[i + 2])) >= 0) {
			put(o, (char)(hi << 4 | lo));
			i += 2;
			continue;
		}
		put(o, f[i]);
	}
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Length of name without its "_<digits>" stamp. */
static size_t strip_stamp(const char *name, size_t n)
{
	size_t i = n;

	while (i > 0 && isdigit((unsigned char)name[i - 1]))
		i--;
	if (i < n && i > 1 && name[i - 1] == '_')
		return i - 1;
	return n;
}

const char *ocaml_skip_dune_exe(const char *unit)
{
	size_t n = strlen(OCAML_DUNE_EXE_PREFIX);

	if (!strncmp(unit, OCAML_DUNE_EXE_PREFIX, n) && isupper((unsigned char)unit[n]))
		return unit + n;
	return unit;
}

int ocaml_name(const char *sym, char *buf, size_t len)
{
	const char *p = sym + 4, *sep;
	struct out o = {buf, len, 0};
	size_t n;

	if (!len || strncmp(sym, "caml", 4) || !isupper((unsigned char)*p))
		return 0;
	p = ocaml_skip_dune_exe(p);
	/* OCaml 5.x: the unit (its modules joined by "__"), '.', the function. */
	if ((sep = strchr(p, '.')) && sep[1]) {
		for (const char *q = p; q < sep; q++) {
			if (q[0] == '_' && q[1] == '_' && q + 2 < sep &&
			    isupper((unsigned char)q[2])) {
				put(&o, '.');
				q++;
				continue;
			}
			put(&o, *q);
		}
		put(&o, '.');
		put_function(&o, sep + 1);
		buf[o.at] = '\0';
		return 1;
	}
	/* Modules: segments that start with a capital, up to the function. */
	for (;;) {
		sep = strstr(p, "__");
		n = sep ? (size_t)(sep - p) : strlen(p);
		for (size_t i = 0; i < n; i++)
			put(&o, p[i]);
		if (!sep || !isupper((unsigned char)sep[2]))
			break;
		put(&o, '.');
		p = sep + 2;
	}
	if (sep && sep[2]) {
		put(&o, '.');
		put_function(&o, sep + 2);
	}
	buf[o.at] = '\0';
	return 1;
}
