(* fork_sites: a program that forks after Memprof_probe.install (); the
   child, the process to attach, allocates 4-word blocks at one site
   (Fork_sites.child_alloc) for SECONDS, paced, then prints its checksum.
   The parent waits for it.
   usage: fork_sites SECONDS READY_FILE (the child writes its pid there,
   and counts SECONDS from the test's go: Gate) *)

let[@inline never] child_alloc i = (i, i + 1, i + 2, i + 3)

let () =
  Memprof_probe.install ();
  let seconds = float_of_string Sys.argv.(1) in
  (* The parent runs a while first, so its helper thread is up at the fork. *)
  let warm = ref [] in
  for i = 1 to 100_000 do
    warm := [ i ] :: !warm;
    if i mod 1000 = 0 then warm := []
  done;
  Unix.sleepf 0.1;
  match Unix.fork () with
  | 0 ->
      Gate.ready_then_go Sys.argv.(2);
      let t0 = Unix.gettimeofday () in
      let sum = ref 0 in
      while Unix.gettimeofday () -. t0 < seconds do
        for i = 1 to 10_000 do
          let a, _, _, d = child_alloc i in
          sum := !sum + a + d
        done;
        Unix.sleepf 0.0005
      done;
      Printf.printf "child checksum %d\n" (!sum land 0xff);
      exit 0
  | pid ->
      let _ = Unix.waitpid [] pid in
      print_string "parent done\n"
