(* blocked_domain: a domain blocked in a system call through the whole
   detach, for the injected host's detach (built without the package,
   bench/ocaml/no_probe).  At the test's go (Gate) the main domain spawns
   domain W, which allocates at Blocked_domain.in_w until READY.stop
   exists, and allocates itself at Blocked_domain.in_main until
   READY.block exists (the test creates it once both sites were
   sampled).  The main domain then reads a line from READY.fifo, whose
   open blocks until the test opens it for writing: itself (MODE "open"),
   or in a domain it spawns and joins (MODE "join").  Then it allocates at
   in_main again until READY.stop exists.  Last, it starts a Gc.Memprof profile of
   its own, which raises if a profile still samples in this domain, and
   prints "own profile started", then "main words N" and "w words M".
   usage: blocked_domain READY MODE *)

let[@inline never] in_main i = (i, i)
let[@inline never] in_w i = (i, i, i)

let alloc_until path what f =
  let t0 = Unix.gettimeofday () and n = ref 0 in
  while not (Gate.arrived path what t0) do
    for i = 1 to 1000 do
      let x = Sys.opaque_identity (f i) in
      n := !n + 1 + (Hashtbl.hash x land 0)
    done
  done;
  !n

let () =
  Memprof_probe.install ();
  let ready = Sys.argv.(1) in
  Gate.ready_then_go ready;
  let stop = ready ^ ".stop" in
  let w = Domain.spawn (fun () -> alloc_until stop "stop" in_w) in
  let before = alloc_until (ready ^ ".block") "block" in_main in
  let read_fifo () =
    let ic = open_in (ready ^ ".fifo") in
    let line = input_line ic in
    close_in ic;
    line
  in
  let line =
    if Sys.argv.(2) = "join" then
      Domain.join (Domain.spawn read_fifo)
    else read_fifo ()
  in
  let after = alloc_until stop "stop" in_main in
  let tracker = Gc.Memprof.null_tracker in
  (match Gc.Memprof.start ~sampling_rate:1e-3 tracker with
  | p ->
      Gc.Memprof.stop ();
      Gc.Memprof.discard p;
      print_endline "own profile started"
  | exception Failure msg -> Printf.printf "own profile refused: %s\n" msg);
  Printf.printf "main words %d (%s)\nw words %d\n" (3 * (before + after)) line
    (4 * Domain.join w)
