/*
 * OCaml (4.x, no flambda) names a function caml<Unit>__<name>_<stamp>:
 * the compilation unit's module path with "__" between the modules of a
 * packed or dune-wrapped unit, the function's name with characters that
 * are not identifier characters written $XX (hex), and a stamp that makes
 * it unique.  Module initialisers are caml<Unit>__entry, without a stamp.
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

int ocaml_name(const char *sym, char *buf, size_t len)
{
	const char *p = sym + 4, *sep;
	struct out o = {buf, len, 0};
	size_t n;

	if (!len || strncmp(sym, "caml", 4) || !isupper((unsigned char)*p))
		return 0;
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
		const char *f = sep + 2;

		n = strip_stamp(f, strlen(f));
		put(&o, '.');
		for (size_t i = 0; i < n; i++) {
			int hi, lo;

			if (f[i] == '$' && i + 2 < n && (hi = hexval(f[i + 1])) >= 0 &&
			    (lo = hexval(f[i + 2])) >= 0) {
				put(&o, (char)(hi << 4 | lo));
				i += 2;
				continue;
			}
			put(&o, f[i]);
		}
	}
	buf[o.at] = '\0';
	return 1;
}
