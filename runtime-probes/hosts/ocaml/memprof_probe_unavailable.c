/*
 * memprof_probe on OCaml 5.0-5.2 (memprof_probe_version.h): the primitives
 * of memprof_probe.ml, doing nothing.  These runtimes cannot sample
 * (Gc.Memprof.start fails), so nothing here fires a probe, and the link
 * wraps no runtime function (OCAML_FAMILY 5.0 in build.mk).  The poll is
 * registered by install () and never run.
 */
#define CAML_INTERNALS
#include "memprof_probe_version.h"

#if MEMPROF_OCAML_NO_MEMPROF
#include <caml/fail.h>
#include <caml/mlvalues.h>

CAMLprim value memprof_probe_sample(value a, value kind, value w)
{
	(void)a, (void)kind, (void)w;
	return Val_long(0);
}

CAMLprim value memprof_probe_promote(value id)
{
	(void)id;
	return Val_false;
}

CAMLprim value memprof_probe_dealloc(value id, value kind)
{
	(void)id, (void)kind;
	return Val_unit;
}

CAMLprim value memprof_probe_tracer_up(value unit)
{
	(void)unit;
	return Val_false;
}

CAMLprim value memprof_probe_requested_rate(value unit)
{
	(void)unit;
	caml_failwith("memprof_probe: Gc.Memprof does not run on OCaml 5.0-5.2");
}

CAMLprim value memprof_probe_owner(value unit)
{
	(void)unit;
	return Val_long(0);
}

CAMLprim value memprof_probe_start_for_tracer(value lv, value szv, value tracker)
{
	(void)lv, (void)szv, (void)tracker;
	caml_failwith("memprof_probe: Gc.Memprof does not run on OCaml 5.0-5.2");
}

CAMLprim value memprof_probe_stop_for_tracer(value unit)
{
	(void)unit;
	return Val_unit;
}

CAMLprim value memprof_probe_ack(value up)
{
	(void)up;
	return Val_unit;
}

CAMLprim value memprof_probe_install(value unit)
{
	(void)unit;
	return Val_unit;
}
#endif
