(* orphan: a domain that exits while its profile samples, leaving it to the
   domain it spawned, for the injected host's detach (built without the
   package, bench/ocaml/no_probe).  At the test's go (Gate) the main
   domain spawns domain A and waits for it, polling.  A allocates at
   Orphan.in_a until READY.spawn exists (the test creates it once A
   sampled), then spawns domain C and exits.  C allocates at Orphan.in_c
   until READY.stop exists.  "done" is written to READY.a_done once A
   has returned; at exit the program prints "c words W".
   usage: orphan READY *)

let[@inline never] in_a i = (i, i)
let[@inline never] in_c i = (i, i, i)

let say path = let oc = open_out path in output_string oc "done\n"; close_out oc

let () =
  Memprof_probe.install ();
  let ready = Sys.argv.(1) in
  Gate.ready_then_go ready;
  let c = Atomic.make None in
  let a =
    Domain.spawn (fun () ->
        let t0 = Unix.gettimeofday () and s = ref 0 in
        while not (Gate.arrived (ready ^ ".spawn") "spawn" t0) do
          for i = 1 to 1000 do
            s := !s + fst (Sys.opaque_identity (in_a i))
          done
        done;
        Atomic.set c
          (Some
             (Domain.spawn (fun () ->
                  let t0 = Unix.gettimeofday () and n = ref 0 in
                  while not (Gate.arrived (ready ^ ".stop") "stop" t0) do
                    for i = 1 to 1000 do
                      let x, _, _ = Sys.opaque_identity (in_c i) in
                      n := !n + 1 + (x land 0)
                    done
                  done;
                  !n)));
        !s)
  in
  (* The main domain waits running OCaml code, not blocked in a join, so
     that it takes part in the attach and the detach like any domain. *)
  while Atomic.get c = None do
    Unix.sleepf 0.001
  done;
  ignore (Domain.join a);
  say (ready ^ ".a_done");
  let stop = ready ^ ".stop" in
  while not (Sys.file_exists stop) do
    Unix.sleepf 0.001
  done;
  match Atomic.get c with
  | Some c -> Printf.printf "c words %d\n" (4 * Domain.join c)
  | None -> exit 2
