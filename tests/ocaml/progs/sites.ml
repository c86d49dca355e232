(* sites: three allocation sites with known word shares and lifetimes,
   paced, attachable by memprof-bpf.  Every iteration allocates
   [short_per_iter] points (Work.make_point, garbage at once), one record
   (Work.make_record, kept in a ring of [ring] entries) and, every
   [long_every] iterations, one entry kept until exit (Work.make_entry).
   It runs ITERATIONS iterations, paced at WORDS_PER_SEC words (0: as fast
   as it can), so its output does not depend on timing.  At exit it prints,
   per site, the words (headers included) it allocates per iteration, then
   the iterations run, a checksum of its work and the minor heap's size.
   It starts once the test says go (Gate); with [linger] it then allocates
   garbage until the test says stop, before it prints.
   usage: sites ITERATIONS READY_FILE [WORDS_PER_SEC [linger]] *)

let short_per_iter = 4
let long_every = 2
let ring = 20_000

let () =
  Memprof_probe.install ();
  let iterations = int_of_string Sys.argv.(1) in
  let ready = Sys.argv.(2) in
  let words_per_sec =
    if Array.length Sys.argv > 3 then float_of_string Sys.argv.(3) else 5e6
  in
  let linger = Array.length Sys.argv > 4 && Sys.argv.(4) = "linger" in
  Gate.ready_then_go ready;
  let ring_a = Array.make ring [||] in
  let long = ref [] in
  let sum = ref 0 in
  let iters = ref 0 in
  let t0 = Unix.gettimeofday () in
  let per_iter =
    (short_per_iter * Work.words_short) + Work.words_medium
    + (Work.words_long / long_every) + 3 (* the list cell *) / long_every
  in
  let batch = 10_000 in
  let fin = ref false in
  while not !fin do
    for _ = 1 to batch do
      let i = !iters in
      for k = 1 to short_per_iter do
        let p = Work.make_point (i + k) in
        sum := !sum + p.Work.z
      done;
      let r = Work.make_record i in
      ring_a.(i mod ring) <- r;
      if i mod long_every = 0 then long := Work.make_entry i :: !long;
      incr iters
    done;
    let now = Unix.gettimeofday () in
    let target = float_of_int (!iters * per_iter) /. words_per_sec in
    if words_per_sec > 0. && now -. t0 < target then Unix.sleepf (target -. (now -. t0));
    if !iters >= iterations then fin := true
  done;
  if linger then Gate.linger ready;
  let per k = float_of_int k in
  Printf.printf "site Work.make_point %.2f\n" (per (short_per_iter * Work.words_short));
  Printf.printf "site Work.make_record %.2f\n" (per Work.words_medium);
  Printf.printf "site Work.make_entry %.2f\n" (per Work.words_long /. per long_every);
  Printf.printf "site Sites.entry %.2f\n" (3. /. per long_every);
  Printf.printf "iterations %d\nkept %d\nchecksum %d\n" !iters (List.length !long) !sum;
  Printf.printf "minor_heap_words %d\n" (Gc.get ()).Gc.minor_heap_size
