/*
 * The allocation site of a stack (site.h): the rule, its lists, and the
 * frames --skip-frames adds.  userspace/output/README.md documents them.
 */
#include "site.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The frames that are not the program's, by kind.  A name matches an entry
 * when its qualified name (past a function template's return type) is the
 * entry, or the entry followed by its parameters, template arguments, an
 * ABI tag or a clone suffix ('(', '<', '[', '.', ' '); an entry ending in
 * '*' matches every name it starts (a module's name matches the frames of
 * that module nothing names, "module+0xOFF").
 */
struct site_entry {
	const char *name;
	enum site_kind kind;
};

static const struct site_entry entries[] = {
    /* The C library's allocator. */
    {"malloc", SITE_ALLOCATOR},
    {"calloc", SITE_ALLOCATOR},
    {"realloc", SITE_ALLOCATOR},
    {"reallocarray", SITE_ALLOCATOR},
    {"posix_memalign", SITE_ALLOCATOR},
    {"aligned_alloc", SITE_ALLOCATOR},
    {"memalign", SITE_ALLOCATOR},
    {"valloc", SITE_ALLOCATOR},
    {"pvalloc", SITE_ALLOCATOR},
    {"free", SITE_ALLOCATOR},
    {"strdup", SITE_ALLOCATOR},
    {"strndup", SITE_ALLOCATOR},
    {"__strdup", SITE_ALLOCATOR},
    {"__strndup", SITE_ALLOCATOR},
    {"__libc_malloc", SITE_ALLOCATOR},
    {"__libc_calloc", SITE_ALLOCATOR},
    {"__libc_realloc", SITE_ALLOCATOR},
    {"__libc_memalign", SITE_ALLOCATOR},
    /* C++: the allocation functions, the standard library (libstdc++ and
     * libc++ both live in std::), the ABI's runtime. */
    {"operator new", SITE_ALLOCATOR},
    {"operator delete", SITE_ALLOCATOR},
    {"std::*", SITE_STDLIB},
    {"__gnu_cxx::*", SITE_STDLIB},
    {"__cxa_*", SITE_STDLIB},
    /* GNU and git style x-wrappers */
    {"xmalloc", SITE_WRAPPER},
    {"xcalloc", SITE_WRAPPER},
    {"xrealloc", SITE_WRAPPER},
    {"xmallocz", SITE_WRAPPER},
    {"xstrdup", SITE_WRAPPER},
    {"xstrndup", SITE_WRAPPER},
    {"xmemdupz", SITE_WRAPPER},
    {"do_xmalloc", SITE_WRAPPER},
    {"do_xmallocz", SITE_WRAPPER},
    {"xzalloc", SITE_WRAPPER},
    {"xnmalloc", SITE_WRAPPER},
    {"xmemdup", SITE_WRAPPER},
    /* GLib */
    {"g_malloc", SITE_WRAPPER},
    {"g_malloc0", SITE_WRAPPER},
    {"g_realloc", SITE_WRAPPER},
    {"g_malloc_n", SITE_WRAPPER},
    {"g_malloc0_n", SITE_WRAPPER},
    {"g_realloc_n", SITE_WRAPPER},
    {"g_try_malloc", SITE_WRAPPER},
    {"g_try_malloc0", SITE_WRAPPER},
    {"g_try_realloc", SITE_WRAPPER},
    {"g_slice_alloc", SITE_WRAPPER},
    {"g_slice_alloc0", SITE_WRAPPER},
    {"g_strdup", SITE_WRAPPER},
    {"g_strndup", SITE_WRAPPER},
    {"g_memdup", SITE_WRAPPER},
    {"g_memdup2", SITE_WRAPPER},
    /* CPython */
    {"PyMem_*", SITE_WRAPPER},
    {"_PyMem_*", SITE_WRAPPER},
    {"PyObject_Malloc", SITE_WRAPPER},
    {"PyObject_Calloc", SITE_WRAPPER},
    {"PyObject_Realloc", SITE_WRAPPER},
    {"_PyObject_Malloc", SITE_WRAPPER},
    {"_PyObject_Calloc", SITE_WRAPPER},
    {"_PyObject_Realloc", SITE_WRAPPER},
    {"pymalloc_alloc", SITE_WRAPPER},
    {"pymalloc_realloc", SITE_WRAPPER},
    {"_PyObject_MallocWithType", SITE_WRAPPER},
    /* Perl */
    {"Perl_safesysmalloc", SITE_WRAPPER},
    {"Perl_safesyscalloc", SITE_WRAPPER},
    {"Perl_safesysrealloc", SITE_WRAPPER},
    /* LLVM */
    {"llvm::safe_malloc", SITE_WRAPPER},
    {"llvm::safe_calloc", SITE_WRAPPER},
    {"llvm::safe_realloc", SITE_WRAPPER},
    {"llvm::allocate_buffer", SITE_WRAPPER},
    /* SQLite: every function of the library (its API, sqlite3_*, and its
     * internals, sqlite3Xxx, which Debian's build exports): the site is the
     * program's call into it. */
    {"sqlite3*", SITE_LIBRARY},
    {"libsqlite3.so*", SITE_LIBRARY}, /* its frames no symbol names */
};

#define N_ENTRIES (sizeof(entries) / sizeof(entries[0]))

/* ---- --skip-frames ---- */

#define MAX_SKIPS 32

static struct {
	regex_t re[MAX_SKIPS];
	char *src[MAX_SKIPS];
	int n;
} skips;

int site_skip_add(const char *regex, char *err, size_t len)
{
	char *anchored;
	int rc;

	if (skips.n == MAX_SKIPS) {
		snprintf(err, len, "at most %d --skip-frames", MAX_SKIPS);
		return -1;
	}
	anchored = malloc(strlen(regex) + 5);
	if (!anchored) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	sprintf(anchored, "^(%s)$", regex);
	rc = regcomp(&skips.re[skips.n], anchored, REG_EXTENDED | REG_NOSUB);
	free(anchored);
	if (rc) {
		char msg[128];

		regerror(rc, &skips.re[skips.n], msg, sizeof(msg));
		regfree(&skips.re[skips.n]);
		snprintf(err, len, "bad --skip-frames regex '%s': %s", regex, msg);
		return -1;
	}
	skips.src[skips.n] = strdup(regex);
	if (!skips.src[skips.n]) {
		regfree(&skips.re[skips.n]);
		snprintf(err, len, "out of memory");
		return -1;
	}
	skips.n++;
	return 0;
}

void site_skip_clear(void)
{
	for (int i = 0; i < skips.n; i++) {
		regfree(&skips.re[i]);
		free(skips.src[i]);
	}
	skips.n = 0;
}

/* The length of name without its parameter list, as pprof cuts it: at the
 * first '(' that does not start "(anonymous namespace)" or "operator()". */
static size_t without_params(const char *name)
{
	static const char anon[] = "(anonymous namespace)";
	size_t i = 0;

	for (;; i++) {
		i += strcspn(name + i, "(");
		if (!name[i])
			return i;
		if (!strncmp(name + i, anon, sizeof(anon) - 1)) {
			i += sizeof(anon) - 2;
			continue;
		}
		if (i >= 8 && !strncmp(name + i - 8, "operator()", 10)) {
			i++;
			continue;
		}
		return i;
	}
}

/* n, less the ABI tags that end name[0..n) ("f[abi:cxx11]" is f's name). */
static size_t without_abi_tags(const char *name, size_t n)
{
	static const char tag[] = "[abi:";

	while (n > 0 && name[n - 1] == ']') {
		size_t i = n - 1;

		while (i > 0 && name[i] != '[')
			i--;
		if (n - i < sizeof(tag) - 1 || strncmp(name + i, tag, sizeof(tag) - 1))
			break;
		n = i;
	}
	return n;
}

static int skipped_by_user(const char *name)
{
	char buf[1024], *copy = buf;
	size_t n;
	int hit = 0;

	if (!skips.n)
		return 0;
	n = without_abi_tags(name, without_params(name));
	if (n >= sizeof(buf) && !(copy = malloc(n + 1)))
		return 0;
	memcpy(copy, name, n);
	copy[n] = '\0';
	for (int i = 0; i < skips.n && !hit; i++)
		hit = !regexec(&skips.re[i], copy, 0, NULL, 0);
	if (copy != buf)
		free(copy);
	return hit;
}

/* ---- The qualified name in a demangled name ---- */

static int ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '$';
}

const char *site_qualified_name(const char *name)
{
	static const char anon[] = "(anonymous namespace)";
	size_t start = 0;
	int depth = 0;

	for (size_t i = 0; name[i]; i++) {
		char c = name[i];

		if (!strncmp(name + i, "operator", 8) && (i == 0 || !ident_char(name[i - 1])) &&
		    !ident_char(name[i + 8]))
			/* What follows is the operator's name, spaces and all
			 * ("operator new[]", "operator<<", "operator std::string"). */
			return depth ? name : name + start;
		switch (c) {
		case '(':
			if (!strncmp(name + i, anon, sizeof(anon) - 1)) {
				i += sizeof(anon) - 2;
				break;
			}
			if (!depth)
				return name + start; /* the parameters */
			depth++;
			break;
		case '<':
		case '[':
		case '{':
			depth++;
			break;
		case ')':
		case '>':
		case ']':
		case '}':
			if (depth)
				depth--;
			break;
		case ' ':
			if (!depth)
				start = i + 1;
			break;
		default:
			break;
		}
	}
	return name + start;
}

static int entry_matches(const char *q, const char *e)
{
	size_t n = strlen(e);

	if (e[n - 1] == '*')
		return !strncmp(q, e, n - 1);
	/* strchr finds the terminating '\0' too: the name is the entry. */
	return !strncmp(q, e, n) && strchr("(<[. ", q[n]) != NULL;
}

enum site_kind site_frame_kind(const char *name)
{
	const char *q = site_qualified_name(name);

	for (size_t i = 0; i < N_ENTRIES; i++)
		if (entry_matches(q, entries[i].name))
			return entries[i].kind;
	if (skipped_by_user(name))
		return SITE_SKIPPED;
	return SITE_PROGRAM;
}

int site_allocator_frame(const char *name)
{
	return site_frame_kind(name) != SITE_PROGRAM;
}

/* ---- The rule ---- */

static int same_module(int a, int b)
{
	return a >= 0 && a == b;
}

/*
 * May the unnamed frame u belong to the skipped named frame w next to it?
 * The same module; or, when w's module is unknown (frames from names
 * only), w a wrapper or a library, never the allocator a stripped program
 * calls.
 */
static int joins(const struct site_frame *u, const struct site_frame *w, enum site_kind wk)
{
	if (w->module >= 0)
		return same_module(u->module, w->module);
	return wk == SITE_WRAPPER || wk == SITE_LIBRARY;
}

size_t site_index(const struct site_frame *f, size_t n)
{
	const struct site_frame *last = NULL; /* the last frame skipped */
	enum site_kind last_kind = SITE_PROGRAM;

	for (size_t i = 0; i < n; i++) {
		enum site_kind k;
		size_t j;

		if (f[i].named) {
			k = site_frame_kind(f[i].name);
			if (k == SITE_PROGRAM)
				return i;
			last = &f[i], last_kind = k;
			continue;
		}
		/* Unnamed: a frame of a library's module (its entry names it,
		 * "libsqlite3.so*") or one --skip-frames names, a static function
		 * of the wrapper's own module that calls it (or calls what it
		 * calls), ... */
		if (site_frame_kind(f[i].name) != SITE_PROGRAM ||
		    (last && (last->named ? joins(&f[i], last, last_kind)
					  : same_module(f[i].module, last->module)))) {
			last = &f[i];
			continue;
		}
		/* ... or that it calls, unnamed frames of one module below a
		 * named wrapper of that module. */
		for (j = i + 1; j < n && !f[j].named && same_module(f[j].module, f[i].module); j++)
			;
		if (j < n && f[j].named && (k = site_frame_kind(f[j].name)) != SITE_PROGRAM &&
		    joins(&f[i], &f[j], k)) {
			last = &f[j - 1];
			i = j - 1;
			continue;
		}
		return i;
	}
	return 0;
}

/* "module+0xOFF" or "[unknown]+0xADDR": a frame nothing names. */
static int unnamed_name(const char *s, size_t *module_len)
{
	const char *plus = strstr(s, "+0x");

	if (!plus || plus == s || plus[3 + strspn(plus + 3, "0123456789abcdef")] != '\0')
		return 0;
	if (memchr(s, ' ', (size_t)(plus - s)) || memchr(s, '(', (size_t)(plus - s)))
		return 0;
	*module_len = (size_t)(plus - s);
	return 1;
}

const char *site_of_names(const char *const *names, size_t n)
{
	struct site_frame *f;
	const char *site;

	if (!n)
		return "";
	f = calloc(n, sizeof(*f));
	if (!f)
		return names[0];
	for (size_t i = 0; i < n; i++) {
		size_t len;

		f[i].name = names[i];
		f[i].module = -1;
		f[i].named = !unnamed_name(names[i], &len);
		if (f[i].named)
			continue;
		/* A module number: the first frame naming the same module. */
		f[i].module = (int)i;
		for (size_t k = 0; k < i; k++) {
			size_t kl;

			if (!f[k].named && unnamed_name(names[k], &kl) && kl == len &&
			    !strncmp(names[k], names[i], len)) {
				f[i].module = f[k].module;
				break;
			}
		}
	}
	site = names[site_index(f, n)];
	free(f);
	return site;
}

struct site site_of_stack_site(const struct profile_stack *s)
{
	struct profile_name names[PROFILE_MAX_NAMES];
	struct site_frame f[PROFILE_MAX_NAMES];
	size_t n = profile_stack_entries(s, names, PROFILE_MAX_NAMES), i;
	struct site out = {"", NULL, 0};

	if (!n)
		return out;
	for (i = 0; i < n; i++) {
		f[i].name = names[i].name;
		f[i].module = names[i].frame ? names[i].frame->module : -1;
		f[i].named = names[i].frame ? names[i].frame->named : 1;
	}
	/* A Python program: the site is the innermost Python frame (the C code
	 * below it is the interpreter's, or what the Python line called). */
	for (i = 0; i < n && !(names[i].frame && names[i].frame->python); i++)
		;
	if (i == n)
		i = site_index(f, n);
	out.name = names[i].name;
	if (names[i].line && names[i].line->file && names[i].line->line > 0) {
		out.file = names[i].line->file;
		out.line = names[i].line->line;
	}
	return out;
}

const char *site_of_stack(const struct profile_stack *s)
{
	return site_of_stack_site(s).name;
}

int site_compare(const struct site *a, const struct site *b)
{
	int c = strcmp(a->name, b->name);

	if (c)
		return c;
	if (!a->file != !b->file)
		return a->file ? 1 : -1;
	if (a->file && (c = strcmp(a->file, b->file)))
		return c;
	return a->line < b->line ? -1 : a->line > b->line;
}

void site_format(const struct site *st, unsigned flags, char *buf, size_t len)
{
	profile_name_format(st->name, st->file, st->line, flags | PROFILE_NAME_LINES, buf, len);
}

/* ---- pprof's drop_frames ---- */

/* s with the characters a regular expression gives a meaning escaped. */
static size_t regex_escape(char *out, const char *s, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		if (strchr("\\.+*?()|[]{}^$", s[i]))
			out[o++] = '\\';
		out[o++] = s[i];
	}
	return o;
}

/*
 * A token of a demangled name: a character that is not a space or a
 * bracket, or template arguments (nested up to 8 deep: a regular
 * expression cannot count brackets).
 */
#define RX_NEST(inner) "(?:[^<>]|<" inner ">)*"
#define RX_ARGS RX_NEST(RX_NEST(RX_NEST(RX_NEST(RX_NEST(RX_NEST(RX_NEST("[^<>]*")))))))
#define RX_TOKEN "(?:[^<> ]|<" RX_ARGS ">)"

char *site_drop_frames(void)
{
	size_t len = 64;
	char *out, *o;

	for (size_t i = 0; i < N_ENTRIES; i++)
		len += 2 * strlen(entries[i].name) + 4 * sizeof(RX_TOKEN) + 32;
	for (int i = 0; i < skips.n; i++)
		len += strlen(skips.src[i]) + 8;
	out = o = malloc(len);
	if (!out)
		return NULL;
	/* A function template's return type (words outside template
	 * arguments, each followed by a space), then one of the entries, the
	 * rest of the name without a space outside template arguments. */
	o += sprintf(o, "(?:" RX_TOKEN "* )*(?:");
	for (size_t i = 0; i < N_ENTRIES; i++) {
		const char *e = entries[i].name;
		size_t n = strlen(e);

		if (i)
			*o++ = '|';
		if (e[n - 1] == '*') {
			o += regex_escape(o, e, n - 1);
			o += sprintf(o, RX_TOKEN "*");
		} else {
			o += regex_escape(o, e, n);
			o += sprintf(o, "(?:[\\[.]" RX_TOKEN "*|<" RX_ARGS ">" RX_TOKEN "*)?");
		}
	}
	*o++ = ')';
	for (int i = 0; i < skips.n; i++)
		o += sprintf(o, "|(?:%s)", skips.src[i]);
	*o = '\0';
	return out;
}
