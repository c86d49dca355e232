(* sizes: blocks of 1 to 300 fields, one allocation site per size, for the
   estimated objects (tests/ocaml/test_objects.c).  Blocks.wNNN n (generated
   by runtime-probes/hosts/ocaml/build.mk) allocates n arrays of NNN fields
   with Array.make, NNN + 1 words each with the header: in the minor heap
   up to Max_young_wosize (256) fields, in the major heap above.  Site wNNN
   allocates ceil (WORDS / (NNN + 1)) blocks, so that every site allocates
   about WORDS words, and at least MIN_BLOCKS.  It starts once the test
   says go (Gate) and Gc.Memprof samples for the tracer, then prints
   "site Blocks.wNNN blocks N" per site.
   usage: sizes READY_FILE WORDS MIN_BLOCKS *)

let () =
  Memprof_probe.install ();
  let ready = Sys.argv.(1) in
  let words = int_of_string Sys.argv.(2) in
  let min_blocks = int_of_string Sys.argv.(3) in
  Gate.ready_then_go ready;
  (* The host starts Gc.Memprof at its next poll after the attach. *)
  let t0 = Unix.gettimeofday () in
  while not (Memprof_probe.sampling_for_tracer ()) do
    if Unix.gettimeofday () -. t0 > Gate.timeout_s then (
      prerr_endline "sizes: sampling for the tracer never started";
      exit 3);
    ignore (Sys.opaque_identity (Gate.garbage 0));
    Unix.sleepf 0.001
  done;
  let n_sites = Array.length Blocks.sites - 1 in
  let blocks = Array.make (n_sites + 1) 0 in
  for w = 1 to n_sites do
    blocks.(w) <- max ((words + w) / (w + 1)) min_blocks;
    Blocks.sites.(w) blocks.(w)
  done;
  for w = 1 to n_sites do
    Printf.printf "site Blocks.w%03d blocks %d\n" w blocks.(w)
  done
