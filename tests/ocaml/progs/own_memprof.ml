(* own_memprof: a program that runs Gc.Memprof itself, attachable by
   memprof-bpf.  Its tracker checks that its own data comes back intact
   (alloc returns its tag, promote and dealloc get it back).
   usage: own_memprof SECONDS READY_FILE early|late
   (SECONDS from the test's go: Gate)
   early: its profile runs from start to end; late: it starts its profile
   at a third of the run and stops it at two thirds.  Prints its samples
   and errors (always 0 when all is well). *)

let samples = ref 0
let errors = ref 0
let tag = 4242

let tracker : (int, int) Gc.Memprof.tracker =
  {
    alloc_minor = (fun _ -> incr samples; Some tag);
    alloc_major = (fun _ -> incr samples; Some (tag + 1));
    promote = (fun d -> if d <> tag then incr errors; Some (tag + 1));
    dealloc_minor = (fun d -> if d <> tag then incr errors);
    dealloc_major = (fun d -> if d <> tag + 1 then incr errors);
  }

let[@inline never] garbage i = [| i; i; i |]

let () =
  Memprof_probe.install ();
  let seconds = float_of_string Sys.argv.(1) in
  let late = Sys.argv.(3) = "late" in
  if not late then ignore (Gc.Memprof.start ~sampling_rate:1e-3 ~callstack_size:10 tracker);
  Gate.ready_then_go Sys.argv.(2);
  let t0 = Unix.gettimeofday () in
  let keep = Array.make 1000 [||] in
  let i = ref 0 and started = ref (not late) and stopped = ref false in
  while Unix.gettimeofday () -. t0 < seconds do
    for _ = 1 to 1000 do
      keep.(!i mod 1000) <- garbage !i;
      incr i
    done;
    let t = Unix.gettimeofday () -. t0 in
    if late && (not !started) && t > seconds /. 3. then (
      ignore (Gc.Memprof.start ~sampling_rate:1e-3 ~callstack_size:10 tracker);
      started := true);
    if late && !started && (not !stopped) && t > 2. *. seconds /. 3. then (
      Gc.Memprof.stop ();
      stopped := true);
    Unix.sleepf 0.0002
  done;
  if not late then Gc.Memprof.stop ();
  Printf.printf "own samples %s\nerrors %d\n"
    (if !samples > 0 then "yes" else "no") !errors
