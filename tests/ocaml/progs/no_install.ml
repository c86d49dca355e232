(* no_install: linked with memprof_probe but never names the module, so it
   never calls Memprof_probe.install () (tests/ocaml/test_unmodified.c): it
   links all the same (the library is always linked, -linkall), says go,
   then allocates until READY.stop (Gate.linger), with no sampling for any
   tracer.
   usage: no_install READY_FILE *)

let () =
  let ready = Sys.argv.(1) in
  Gate.ready_then_go ready;
  Gate.linger ready
