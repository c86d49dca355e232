(* sites_domains (OCaml 5): the sites program's work (tests/ocaml/progs/
   sites.ml, unpaced) shared by DOMAINS domains, each running
   ITERATIONS / DOMAINS iterations with a ring and a list of its own, for
   the OCaml host's overhead table with domains (bench/tables/t5-ocaml.sh).
   usage: sites_domains ITERATIONS READY_FILE DOMAINS *)

let short_per_iter = 4
let long_every = 2
let ring = 20_000

let work iterations =
  let ring_a = Array.make ring [||] in
  let long = ref [] in
  let sum = ref 0 in
  for i = 0 to iterations - 1 do
    for k = 1 to short_per_iter do
      let p = Work.make_point (i + k) in
      sum := !sum + p.Work.z
    done;
    ring_a.(i mod ring) <- Work.make_record i;
    if i mod long_every = 0 then long := Work.make_entry i :: !long
  done;
  !sum + List.length !long

let () =
  Memprof_probe.install ();
  let iterations = int_of_string Sys.argv.(1) in
  let ready = Sys.argv.(2) in
  let domains = int_of_string Sys.argv.(3) in
  Gate.ready_then_go ready;
  let each = iterations / domains in
  let ds = List.init domains (fun _ -> Domain.spawn (fun () -> work each)) in
  let total = List.fold_left (fun acc d -> acc + Domain.join d) 0 ds in
  Printf.printf "domains %d iterations %d checksum %d\n" domains (each * domains) total
