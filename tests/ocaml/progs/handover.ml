(* handover: a traced program that takes Gc.Memprof over.  Until T1 seconds
   it refills a ring of [ring] 4-word blocks from Handover.before (so many
   sampled blocks are alive when it takes over).  Then it starts its own
   Gc.Memprof (a counting tracker), refills the ring from Handover.after,
   runs a full major collection (every block of Handover.before is dead from
   then on) and goes on refilling from Handover.after until SECONDS.  Its
   times count from the test's go (Gate).
   usage: handover SECONDS T1 READY_FILE *)

let ring = 200_000
let own = ref 0

let tracker : (unit, unit) Gc.Memprof.tracker =
  {
    Gc.Memprof.null_tracker with
    alloc_minor = (fun _ -> incr own; None);
    alloc_major = (fun _ -> incr own; None);
  }

let[@inline never] before i = [| i; i + 1; i + 2 |]
let[@inline never] after i = [| i; i + 2; i + 4 |]

let () =
  Memprof_probe.install ();
  let seconds = float_of_string Sys.argv.(1) in
  let t1 = float_of_string Sys.argv.(2) in
  Gate.ready_then_go Sys.argv.(3);
  let r = Array.make ring [||] in
  let t0 = Unix.gettimeofday () in
  let i = ref 0 in
  while Unix.gettimeofday () -. t0 < t1 do
    for _ = 1 to 1000 do
      r.(!i mod ring) <- before !i;
      incr i
    done;
    Unix.sleepf 0.0002
  done;
  ignore (Gc.Memprof.start ~sampling_rate:1e-3 ~callstack_size:10 tracker);
  for k = 0 to ring - 1 do
    r.(k) <- after k
  done;
  Gc.full_major ();
  while Unix.gettimeofday () -. t0 < seconds do
    for _ = 1 to 1000 do
      r.(!i mod ring) <- after !i;
      incr i
    done;
    Unix.sleepf 0.0002
  done;
  Printf.printf "own samples %s\n" (if !own > 0 then "yes" else "no")
