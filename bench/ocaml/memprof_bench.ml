(* The anchor column of Table 1: OCaml's own Gc.Memprof on the two seed
   workloads.

   usage: memprof_bench short|long tracked|untracked RATE ITERATIONS

   short: a small record allocated in a loop and dropped at once.
   long:  the same record stored into a 1,000,000-slot array, so it
          survives to the major heap and dies when its slot is reused.
   RATE 0 runs the same program without starting Gc.Memprof.
   tracked: the callbacks return Some (), so every sample is followed to
   its death; untracked: they return None.
   Prints "samples N" (alloc callbacks run) on stdout. *)

type record = { a : int; b : int }

let array_slots = 1_000_000

let usage () =
  prerr_endline "usage: memprof_bench short|long tracked|untracked RATE ITERATIONS";
  exit 2

let samples = ref 0

let tracker tracked =
  let on_alloc _ =
    incr samples;
    if tracked then Some () else None
  in
  {
    Gc.Memprof.alloc_minor = on_alloc;
    alloc_major = on_alloc;
    promote = (fun () -> Some ());
    dealloc_minor = (fun () -> ());
    dealloc_major = (fun () -> ());
  }

let run_short n =
  for i = 1 to n do
    ignore (Sys.opaque_identity { a = i; b = i })
  done

let run_long n =
  let slots = Array.make array_slots { a = 0; b = 0 } in
  for i = 1 to n do
    Array.unsafe_set slots (i mod array_slots) { a = i; b = i }
  done;
  ignore (Sys.opaque_identity slots)

let () =
  if Array.length Sys.argv <> 5 then usage ();
  let kind = Sys.argv.(1) and mode = Sys.argv.(2) in
  let rate =
    match float_of_string_opt Sys.argv.(3) with
    | Some r when r >= 0. && r <= 1. -> r
    | _ ->
        prerr_endline ("memprof_bench: bad RATE '" ^ Sys.argv.(3) ^ "'");
        exit 2
  in
  let n =
    match int_of_string_opt Sys.argv.(4) with
    | Some n when n > 0 -> n
    | _ ->
        prerr_endline ("memprof_bench: bad ITERATIONS '" ^ Sys.argv.(4) ^ "'");
        exit 2
  in
  let tracked =
    match mode with
    | "tracked" -> true
    | "untracked" -> false
    | _ -> usage ()
  in
  let run =
    match kind with
    | "short" -> run_short
    | "long" -> run_long
    | _ -> usage ()
  in
  if rate > 0. then Gc.Memprof.start ~sampling_rate:rate (tracker tracked);
  run n;
  if rate > 0. then Gc.Memprof.stop ();
  Printf.printf "samples %d\n" !samples
