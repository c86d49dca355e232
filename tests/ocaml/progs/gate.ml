(* The handshake of every test program with its test, so that what a
   program does is timed from the tracer's attach, never from its own
   start (the loader's start-up takes from a fraction of a second to
   several seconds).

   [ready_then_go ready] writes the pid into READY (whole, by a rename:
   [write_ready]), then waits until READY.go exists: the test creates it
   once the loader said it is attached (its --ready-file), or at once for
   an untraced run.
   [linger ready] allocates garbage until READY.stop exists, so that a
   test can check that sampling stays off in a program that allocates,
   after the program's own work is done and without changing its output.
   [arrived path what t0] is the check for a program that works while it
   waits.  A file that never comes ends the program with exit 3 after
   [timeout_s], far above any start-up. *)

let timeout_s = 120.

(* Whether PATH exists; exit 3 once [timeout_s] passed since t0 without it. *)
let arrived path what t0 =
  Sys.file_exists path
  ||
  if Unix.gettimeofday () -. t0 > timeout_s then (
    Printf.eprintf "%s: no %s file (%s) within %.0f s\n" Sys.argv.(0) what path timeout_s;
    exit 3)
  else false

let wait_for path what =
  let t0 = Unix.gettimeofday () in
  while not (arrived path what t0) do
    Unix.sleepf 0.001
  done

let write_ready ready =
  let tmp = ready ^ ".tmp" in
  let oc = open_out tmp in
  Printf.fprintf oc "%d\n" (Unix.getpid ());
  close_out oc;
  Sys.rename tmp ready

let ready_then_go ready =
  write_ready ready;
  wait_for (ready ^ ".go") "go"

let[@inline never] garbage i = [| i; i; i |]

let linger ready =
  let stop = ready ^ ".stop" in
  let t0 = Unix.gettimeofday () in
  let sink = ref 0 in
  while not (arrived stop "stop" t0) do
    for i = 1 to 1000 do
      sink := !sink + (garbage i).(0)
    done;
    Unix.sleepf 0.0002
  done;
  ignore (Sys.opaque_identity !sink)
