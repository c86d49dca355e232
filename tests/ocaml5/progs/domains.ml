(* domains: OCaml 5 domains that allocate, each at a site of its own, so
   that a profile's sites tell its domains apart.  Domain K of a group of
   four allocates at Domains.site_K only, blocks of [words.(K)] words
   (header included).  It starts on the test's go (Gate).
   usage:
     domains before SECONDS READY [traced]
                                   install, then (at go) spawn four domains
                                   that allocate for SECONDS, and join them
     domains after SECONDS READY [traced]
                                   at go, spawn four domains (allocating
                                   garbage), install once they all run, then
                                   they allocate for SECONDS
                                   (traced: SECONDS from the moment each
                                   domain samples for the tracer)
     domains churn BLOCKS READY    install; until go, and then until this
                                   domain samples for a tracer, spawn and
                                   join pairs of domains allocating at
                                   Domains.before (and one domain that
                                   allocates there until it samples for
                                   the tracer); then four domains, each
                                   allocating exactly BLOCKS blocks at its
                                   site; write READY.done; then pairs at
                                   Domains.after until READY.stop
   At exit it prints "site Domains.site_K words W" (W: the words allocated
   at the site) and the side pairs it ran. *)

let[@inline never] site_0 i = (i, i)
let[@inline never] site_1 i = (i, i, i)
let[@inline never] site_2 i = (i, i, i, i, i)
let[@inline never] site_3 i = (i, i, i, i, i, i, i)
let[@inline never] before i = [| i; i; i |]
let[@inline never] after i = [| i; i; i |]
let[@inline never] garbage i = [| i |]

let words = [| 3; 4; 6; 8 |]

let[@inline never] alloc k i =
  match k with
  | 0 -> fst (site_0 i)
  | 1 -> let a, _, _ = site_1 i in a
  | 2 -> let a, _, _, _, _ = site_2 i in a
  | _ -> let a, _, _, _, _, _, _ = site_3 i in a

let now = Unix.gettimeofday

(* Domain K allocates at its site until [until ()]; returns its blocks. *)
let allocate_until k until =
  let n = ref 0 and sink = ref 0 in
  while not (until ()) do
    for i = 1 to 1000 do
      sink := !sink + alloc k i
    done;
    n := !n + 1000
  done;
  ignore (Sys.opaque_identity !sink);
  !n

let print counts =
  Array.iteri
    (fun k n -> Printf.printf "site Domains.site_%d words %d\n" k (n * words.(k)))
    counts

let timed seconds =
  let t0 = now () in
  fun () -> now () -. t0 > seconds

let traced = Array.length Sys.argv > 4 && Sys.argv.(4) = "traced"

let until_sampling () =
  let t0 = now () in
  fun () ->
    Memprof_probe.sampling_for_tracer ()
    ||
    if now () -. t0 > Gate.timeout_s then (
      prerr_endline "domains: a domain never sampled for the tracer";
      exit 3)
    else false

(* Domain K's work: its blocks. *)
let work k seconds () =
  let n = if traced then allocate_until k (until_sampling ()) else 0 in
  n + allocate_until k (timed seconds)

let before_mode seconds ready =
  Memprof_probe.install ();
  Gate.ready_then_go ready;
  let ds =
    List.init 4 (fun k -> Domain.spawn (work k seconds))
  in
  print (Array.of_list (List.map Domain.join ds))

let after_mode seconds ready =
  Gate.ready_then_go ready;
  let running = Atomic.make 0 and go = Atomic.make false in
  let ds =
    List.init 4 (fun k ->
        Domain.spawn (fun () ->
            Atomic.incr running;
            let sink = ref 0 in
            while not (Atomic.get go) do
              sink := !sink + (garbage k).(0)
            done;
            ignore (Sys.opaque_identity !sink);
            work k seconds ()))
  in
  while Atomic.get running < 4 do
    Domain.cpu_relax ()
  done;
  Memprof_probe.install ();
  Atomic.set go true;
  print (Array.of_list (List.map Domain.join ds))

(* Two domains allocating [n] blocks at [f], spawned and joined. *)
let pair f n =
  let one () =
    let sink = ref 0 in
    for i = 1 to n do
      sink := !sink + (f i).(0)
    done;
    !sink
  in
  let a = Domain.spawn one and b = Domain.spawn one in
  ignore (Domain.join a + Domain.join b);
  Unix.sleepf 0.001

let churn_mode blocks ready =
  Memprof_probe.install ();
  Gate.write_ready ready;
  let t0 = now () and pairs = ref 0 in
  let go = ready ^ ".go" in
  (* Spawned before the attach, it starts a profile of its own when the
     tracer comes, and exits while traced. *)
  let early =
    Domain.spawn (fun () ->
        let until = until_sampling () in
        let sink = ref 0 in
        while not (until ()) do
          for i = 1 to 1000 do
            sink := !sink + (before i).(0)
          done;
          Unix.sleepf 0.001
        done;
        ignore (Sys.opaque_identity !sink))
  in
  while not (Gate.arrived go "go" t0 && Memprof_probe.sampling_for_tracer ()) do
    if now () -. t0 > Gate.timeout_s then (
      prerr_endline "domains: attached, but this domain never sampled";
      exit 3);
    pair before 2000;
    incr pairs
  done;
  Domain.join early;
  (* Spawned while this domain samples: they sample from their start. *)
  let ds =
    List.init 4 (fun k ->
        Domain.spawn (fun () ->
            let sink = ref 0 in
            for i = 1 to blocks do
              sink := !sink + alloc k i
            done;
            ignore (Sys.opaque_identity !sink)))
  in
  List.iter Domain.join ds;
  let oc = open_out (ready ^ ".done") in
  output_string oc "done\n";
  close_out oc;
  let t1 = now () in
  while not (Gate.arrived (ready ^ ".stop") "stop" t1) do
    pair after 2000;
    incr pairs
  done;
  print (Array.make 4 blocks);
  Printf.printf "pairs %d\n" !pairs

let () =
  let arg = Sys.argv.(2) and ready = Sys.argv.(3) in
  match Sys.argv.(1) with
  | "before" -> before_mode (float_of_string arg) ready
  | "after" -> after_mode (float_of_string arg) ready
  | "churn" -> churn_mode (int_of_string arg) ready
  | m ->
      Printf.eprintf "domains: unknown mode %s\n" m;
      exit 2
