/*
 * OCaml symbol names -> Module.function.  The native compiler names a
 * function caml<Module><sep><function>_<stamp>, where <sep> is "__" (up to
 * OCaml 5.0), "$" (5.1) or "." (5.2 on); nested and packed modules repeat
 * the separator (camlStdlib__List__map_123 is Stdlib.List.map).  Up to 5.0,
 * characters that are not identifier characters are written $XX (hex).
 */
#include "ocaml_names.h"

#include <ctype.h>
#include <string.h>

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

int ocaml_name(const char *sym, char *out, size_t len)
{
	const char *p = sym + 4, *end;
	size_t o = 0;
	int seps = 0;

	if (strncmp(sym, "caml", 4) || !isupper((unsigned char)p[0]) || len < 2)
		return 0;
	end = p + strlen(p);
	/* Drop the _<digits> stamp. */
	{
		const char *q = end;

		while (q > p && isdigit((unsigned char)q[-1]))
			q--;
		if (q < end && q > p && q[-1] == '_')
			end = q - 1;
	}
	while (p < end && o + 1 < len) {
		if (p[0] == '_' && p + 1 < end && p[1] == '_') {
			out[o++] = '.';
			p += 2;
			seps++;
		} else if (p[0] == '$' && p + 2 < end && hexval(p[1]) >= 0 && hexval(p[2]) >= 0 &&
			   seps) {
			out[o++] = (char)(hexval(p[1]) * 16 + hexval(p[2]));
			p += 3;
		} else if (p[0] == '$' || p[0] == '.') {
			out[o++] = '.';
			p++;
			seps++;
		} else {
			out[o++] = *p++;
		}
	}
	out[o] = '\0';
	/* A module alone (camlWork, camlWork__code_begin has a separator) is
	 * still a name, but a symbol without any separator is a data symbol of
	 * the module: keep it as Module. */
	return o > 0;
}
