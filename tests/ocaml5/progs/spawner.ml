(* spawner: an OCaml 5 program never linked with memprof_probe (built with
   the package's stand-in, bench/ocaml/no_probe), whose domains allocate,
   for the attach of an unmodified program.  At the test's go (Gate) it
   spawns four domains; domain K allocates at Spawner.site_K until the
   test's READY.stop exists, while the main domain spawns and joins pairs
   of short domains that allocate at Spawner.churn, until the four are
   done.  At exit it prints "site Spawner.site_K words W" (W: the words,
   headers included) and "pairs N".
   usage: spawner READY *)

let[@inline never] site_0 i = (i, i)
let[@inline never] site_1 i = (i, i, i)
let[@inline never] site_2 i = (i, i, i, i, i)
let[@inline never] site_3 i = (i, i, i, i, i, i, i)
let[@inline never] churn i = [| i; i; i |]

let words = [| 3; 4; 6; 8 |]

let[@inline never] alloc k i =
  match k with
  | 0 -> fst (site_0 i)
  | 1 -> let a, _, _ = site_1 i in a
  | 2 -> let a, _, _, _, _ = site_2 i in a
  | _ -> let a, _, _, _, _, _, _ = site_3 i in a

let run k stop =
  let t0 = Unix.gettimeofday () in
  let n = ref 0 and sum = ref 0 in
  while not (Gate.arrived stop "stop" t0) do
    for i = 1 to 10_000 do
      sum := !sum + Sys.opaque_identity (alloc k i)
    done;
    n := !n + 10_000
  done;
  ignore (Sys.opaque_identity !sum);
  !n

let () =
  Memprof_probe.install ();
  let ready = Sys.argv.(1) in
  let stop = ready ^ ".stop" in
  Gate.ready_then_go ready;
  let done_ = Atomic.make 0 in
  let four =
    Array.init 4 (fun k ->
        Domain.spawn (fun () ->
            let n = run k stop in
            Atomic.incr done_;
            n))
  in
  let pairs = ref 0 in
  while Atomic.get done_ < 4 do
    let side () =
      let s = ref 0 in
      for i = 1 to 20_000 do
        s := !s + (Sys.opaque_identity (churn i)).(0)
      done;
      !s
    in
    let a = Domain.spawn side and b = Domain.spawn side in
    ignore (Domain.join a + Domain.join b);
    incr pairs
  done;
  Array.iteri
    (fun k d ->
      let n = Domain.join d in
      Printf.printf "site Spawner.site_%d words %d\n" k (n * words.(k)))
    four;
  Printf.printf "pairs %d\n" !pairs
