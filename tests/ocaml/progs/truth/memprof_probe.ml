(* Stand-in for the memprof_probe package that gives a program's ground
   truth instead: install () starts the program's own Gc.Memprof at rate 1
   and, at exit, prints "truth NAME WORDS" per innermost frame of the
   allocations' callstacks (Printexc's name, inlined frames included): the
   words Gc.Memprof counts there, headers included.  A run of its own, for
   the attach of the same program never linked with memprof_probe
   (tests/ocaml/test_attach_unmodified.c). *)

let counts : (string, int) Hashtbl.t = Hashtbl.create 16

let innermost cs =
  match Printexc.backtrace_slots cs with
  | Some slots when Array.length slots > 0 -> (
      match Printexc.Slot.name slots.(0) with Some n -> n | None -> "?")
  | _ -> "?"

let count (a : Gc.Memprof.allocation) =
  let n = innermost a.callstack in
  let old = try Hashtbl.find counts n with Not_found -> 0 in
  Hashtbl.replace counts n (old + a.n_samples);
  None

let install () =
  let tracker = { Gc.Memprof.null_tracker with alloc_minor = count; alloc_major = count } in
  ignore (Gc.Memprof.start ~sampling_rate:1.0 ~callstack_size:1 tracker);
  at_exit (fun () ->
      Gc.Memprof.stop ();
      Hashtbl.iter (fun k v -> Printf.printf "truth %s %d\n" k v) counts)
