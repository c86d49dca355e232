/*
 * The call stack of a sample in a Python program: the native frames of the
 * thread (memprof_unwind: the core's unwinder, unw_backtrace's frames),
 * innermost first, where each return address into the
 * interpreter loop (_PyEval_EvalFrameDefault) is replaced by the Python
 * frames that call of the loop runs, each a tagged entry
 * (memprof_probe_abi.h, MEMPROF_PROBE_PY_FRAME_V1) naming a record of the
 * frame table.  So C code called from Python (list growth, a C extension)
 * and Python called back from C are interleaved as they ran; the loader
 * shows the native frames between Python ones only with --native.  A tracer
 * without --native says so (memprof_probe_python_options): the unwind then
 * stops at the innermost call of the interpreter loop, and the stack is the
 * native frames below it, then every Python frame.
 *
 * CPython 3.11 layouts, from its own internal headers (Py_BUILD_CORE):
 * the thread state's cframe->current_frame is the innermost
 * _PyInterpreterFrame; each has f_code, prev_instr (the line is
 * PyCode_Addr2Line of its byte offset) and previous.  Frames still being
 * set up (_PyFrame_IsIncomplete) are skipped, as CPython's own traceback
 * code does.  The walk runs in the allocator hook with the GIL held: the
 * chain cannot change under it, and it reads memory only, calling no
 * Python code and allocating nothing (PyCode_Addr2Line reads the line
 * table).
 *
 * The frame table: records (line, first line, qualified name, file) in a
 * shared mapping of a memfd, written once per (code object, line) and never
 * changed, so that the loader reads them from the file it holds open, after
 * the code object or the process is gone.  An index in private memory maps
 * (code, line) to its record, and (code, instruction) to the record of its
 * line, so that a frame seen before costs one look-up, not a walk of the
 * line table; a code object's address may be reused by another after it
 * dies, so an index hit also compares the name, file and line table
 * objects.  When the table or the index is full, a frame is left out of
 * the stack rather than named wrongly.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/types.h>

#include "memprof_host.h"
#include "memprof_probe_abi.h"
#include "python_host.h"

/* Bytes of the frame table (a sparse file: pages are used as records come). */
#define FRAMES_TABLE_BYTES ((size_t)16 << 20)
/* Slots of the index, a power of two; it is full at 3/4. */
#define FRAMES_INDEX_SLOTS ((size_t)1 << 17)
/* Longest name or file kept, in bytes (cut on a character boundary). */
#define FRAMES_NAME_MAX 1024

/*
 * An index slot maps (code, line) to its record, or (code, instruction
 * offset | FRAMES_KEY_INSTR) to the record of that instruction's line: the
 * walk finds a frame's record from its instruction without computing the
 * line (PyCode_Addr2Line reads the line table from its start: thousands of
 * instructions in a long function).  name, file and lines identify the code
 * object beyond its address, which a new one may reuse after it dies.
 */
#define FRAMES_KEY_INSTR 0x80000000u
struct index_slot {
	const void *code, *name, *file, *lines;
	uint32_t key; /* line, or instruction byte offset | FRAMES_KEY_INSTR */
	uint32_t used;
	uintptr_t record; /* user address of the record */
};

static unsigned char *table;
static size_t table_used;
static struct index_slot *index_slots;
static size_t index_count;
static pthread_mutex_t frames_lock = PTHREAD_MUTEX_INITIALIZER;

int frames_init(void)
{
	int fd = memfd_create(MEMPROF_PROBE_PY_TABLE_NAME, MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)FRAMES_TABLE_BYTES)) {
		close(fd);
		return -1;
	}
	void *t = mmap(NULL, FRAMES_TABLE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd); /* the mapping keeps the file */
	if (t == MAP_FAILED)
		return -1;
	void *ix = mmap(NULL, FRAMES_INDEX_SLOTS * sizeof(struct index_slot),
			PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ix == MAP_FAILED) {
		munmap(t, FRAMES_TABLE_BYTES);
		return -1;
	}
	table = t;
	index_slots = ix;
	/* Offset 0 is never a record: an entry's address is never the table's start. */
	table_used = 8;
	return 0;
}

/* UTF-8 of str (a str object, ready) into out, at most max bytes: the length. */
static size_t utf8_of(PyObject *str, char *out, size_t max)
{
	size_t n = 0;

	if (!str || !PyUnicode_Check(str) || !PyUnicode_IS_READY(str))
		return 0;
	int kind = PyUnicode_KIND(str);
	const void *data = PyUnicode_DATA(str);
	Py_ssize_t len = PyUnicode_GET_LENGTH(str);
	for (Py_ssize_t i = 0; i < len; i++) {
		Py_UCS4 c = PyUnicode_READ(kind, data, i);
		char b[4];
		size_t k;

		if (c < 0x80) {
			b[0] = (char)c;
			k = 1;
		} else if (c < 0x800) {
			b[0] = (char)(0xc0 | (c >> 6));
			b[1] = (char)(0x80 | (c & 0x3f));
			k = 2;
		} else if (c < 0x10000) {
			b[0] = (char)(0xe0 | (c >> 12));
			b[1] = (char)(0x80 | ((c >> 6) & 0x3f));
			b[2] = (char)(0x80 | (c & 0x3f));
			k = 3;
		} else {
			b[0] = (char)(0xf0 | (c >> 18));
			b[1] = (char)(0x80 | ((c >> 12) & 0x3f));
			b[2] = (char)(0x80 | ((c >> 6) & 0x3f));
			b[3] = (char)(0x80 | (c & 0x3f));
			k = 4;
		}
		if (n + k > max)
			break;
		memcpy(out + n, b, k);
		n += k;
	}
	return n;
}

/* Append a record to the table; its user address, or 0 (full). Lock held. */
static uintptr_t record_write(PyCodeObject *code, int line)
{
	char name[FRAMES_NAME_MAX], file[FRAMES_NAME_MAX];
	size_t name_len = utf8_of(code->co_qualname, name, sizeof(name));
	size_t file_len = utf8_of(code->co_filename, file, sizeof(file));
	size_t bytes = MEMPROF_PROBE_PY_RECORD_HEADER + name_len + 1 + file_len + 1;
	size_t at = table_used;

	if (at + bytes > FRAMES_TABLE_BYTES)
		return 0;
	unsigned char *r = table + at;
	uint32_t words[2] = {line > 0 ? (uint32_t)line : 0,
			     code->co_firstlineno > 0 ? (uint32_t)code->co_firstlineno : 0};
	uint16_t lens[2] = {(uint16_t)name_len, (uint16_t)file_len};
	memcpy(r, words, sizeof(words));
	memcpy(r + 8, lens, sizeof(lens));
	memcpy(r + MEMPROF_PROBE_PY_RECORD_HEADER, name, name_len);
	r[MEMPROF_PROBE_PY_RECORD_HEADER + name_len] = 0;
	memcpy(r + MEMPROF_PROBE_PY_RECORD_HEADER + name_len + 1, file, file_len);
	r[MEMPROF_PROBE_PY_RECORD_HEADER + name_len + 1 + file_len] = 0;
	table_used = (at + bytes + 7) & ~(size_t)7;
	return (uintptr_t)r;
}

/* The slot of (code, key): its own, or the empty one where it goes; NULL when full.  Locked. */
static struct index_slot *slot_of(PyCodeObject *code, uint32_t key)
{
	uint64_t h = ((uint64_t)(uintptr_t)code ^ ((uint64_t)key << 32)) * 0x9e3779b97f4a7c15ull;
	size_t i = (size_t)(h >> 32) & (FRAMES_INDEX_SLOTS - 1);

	for (;; i = (i + 1) & (FRAMES_INDEX_SLOTS - 1)) {
		struct index_slot *s = &index_slots[i];

		if (!s->used)
			return index_count >= FRAMES_INDEX_SLOTS / 4 * 3 ? NULL : s;
		if (s->code == code && s->key == key)
			return s;
	}
}

static int slot_names(const struct index_slot *s, const PyCodeObject *code)
{
	return s->name == code->co_qualname && s->file == code->co_filename &&
	       s->lines == code->co_linetable;
}

/* Point slot s (its own or empty) at record rec for (code, key).  Locked. */
static void slot_set(struct index_slot *s, PyCodeObject *code, uint32_t key, uintptr_t rec)
{
	if (!s->used)
		index_count++;
	*s = (struct index_slot){
	    code, code->co_qualname, code->co_filename, code->co_linetable, key, 1, rec};
}

/* The record of (code, line), written if new; 0 if there is no room.  Locked. */
static uintptr_t record_of(PyCodeObject *code, int line)
{
	uint32_t key = (uint32_t)(line > 0 ? line : 0) & ~FRAMES_KEY_INSTR;
	struct index_slot *s = slot_of(code, key);
	uintptr_t rec;

	if (!s)
		return 0;
	if (s->used && slot_names(s, code))
		return s->record;
	/* New, or another code object at a dead one's address: it takes the slot. */
	rec = record_write(code, line);
	if (rec)
		slot_set(s, code, key, rec);
	return rec;
}

/* The record of the line of the instruction at byte offset `at` of code.  Locked. */
static uintptr_t record_at(PyCodeObject *code, int at)
{
	uint32_t key = ((uint32_t)at & ~FRAMES_KEY_INSTR) | FRAMES_KEY_INSTR;
	struct index_slot *s = slot_of(code, key);

	if (s && s->used && slot_names(s, code))
		return s->record;
	uintptr_t rec = record_of(code, cpython.code_addr2line(code, at));
	/* record_of may have filled the slot found above: look again. */
	s = rec ? slot_of(code, key) : NULL;
	if (s)
		slot_set(s, code, key, rec);
	return rec;
}

/*
 * The Python frames of one call of the interpreter loop, from *fp outwards,
 * into buf (at most max): up to and including the frame that call entered
 * with (is_entry; Python-to-Python calls run in the same C call).  *fp
 * becomes the next call's innermost frame.  The index lock is held.
 */
static __attribute__((noinline)) size_t python_frames(_PyInterpreterFrame **fp, uintptr_t *buf,
						      size_t max)
{
	size_t n = 0;

	for (_PyInterpreterFrame *f = *fp; f && n < max;) {
		PyCodeObject *code = f->f_code;
		int entry = f->is_entry;

		if (code && !_PyFrame_IsIncomplete(f)) {
			int lasti = _PyInterpreterFrame_LASTI(f);
			uintptr_t rec = record_at(code, lasti * (int)sizeof(_Py_CODEUNIT));
			if (rec)
				buf[n++] =
				    MEMPROF_PROBE_STACK_OCAML_DBG(MEMPROF_PROBE_PY_FRAME_V1, rec);
		}
		f = f->previous;
		*fp = f;
		if (entry)
			break;
	}
	return n;
}

static int in_eval_loop(uintptr_t ra)
{
	return ra - 1 - cpython.eval_start < cpython.eval_end - cpython.eval_start;
}

/* Native frames read at most (the stack's own array, on this thread's stack). */
#define FRAMES_NATIVE_MAX 256
_Static_assert(FRAMES_NATIVE_MAX <= MEMPROF_UNWIND_MAX, "memprof_unwind gives that many");
/*
 * Without native frames asked for: frames unwound first, enough to reach the
 * interpreter loop from most allocations (the profiler's own six frames
 * included); memprof_unwind unwinds as far as it is allowed, so this bounds
 * the work.  A deeper C stack below the loop is unwound again, whole.
 */
#define FRAMES_INNER_MAX 16

/* Written by a tracer (memprof_probe_abi.h); until then every native frame. */
PYHOST_EXPORT volatile uint32_t memprof_probe_python_options = MEMPROF_PROBE_PY_NATIVE;

/*
 * The native frames into native (at most max): all of them, or, when the
 * tracer shows only those below the innermost Python frame, the unwind
 * stops at the first return address into the interpreter loop (kept: it
 * stands for the Python frames), which is cheaper on a deep stack.
 */
static size_t native_frames(uintptr_t *native, size_t max, int inner_only)
{
	size_t got;

	if (inner_only) {
		got = memprof_unwind(native, max < FRAMES_INNER_MAX ? max : FRAMES_INNER_MAX);
		for (size_t i = 0; i < got; i++)
			if (in_eval_loop(native[i]))
				return i + 1;
	}
	return memprof_unwind(native, max < FRAMES_NATIVE_MAX ? max : FRAMES_NATIVE_MAX);
}

size_t frames_capture(uintptr_t *buf, size_t max)
{
	uintptr_t native[FRAMES_NATIVE_MAX];
	PyThreadState *ts = cpython.thread_state_unchecked_get();
	_PyInterpreterFrame *f = ts && ts->cframe ? ts->cframe->current_frame : NULL;
	int inner_only =
	    f && cpython.eval_end && !(memprof_probe_python_options & MEMPROF_PROBE_PY_NATIVE);
	size_t n_native = native_frames(native, max, inner_only), n = 0;

	pthread_mutex_lock(&frames_lock);
	/* Each return address into the interpreter loop stands for that call's Python frames. */
	for (size_t i = 0; i < n_native && n < max; i++) {
		if (cpython.eval_end && f && in_eval_loop(native[i]))
			n += python_frames(&f, buf + n, max - n);
		else
			buf[n++] = native[i];
	}
	/* Frames of loops the unwinder did not reach: outermost of all. */
	while (f && n < max)
		n += python_frames(&f, buf + n, max - n);
	pthread_mutex_unlock(&frames_lock);
	return n;
}

void frames_fork_child(void)
{
	pthread_mutex_init(&frames_lock, NULL);
}
