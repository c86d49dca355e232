(* threads_sites: two systhreads allocating at two sites, attachable by
   memprof-bpf.  Thread A allocates 4-word blocks (Work_t.alloc_a), thread B
   8-word blocks (Work_t.alloc_b), the same number of blocks each.
   usage: threads_sites SECONDS READY_FILE (SECONDS from the test's go: Gate) *)

let[@inline never] alloc_a i = (i, i, i)
let[@inline never] alloc_b i = (i, i, i, i, i, i, i)

let () =
  Memprof_probe.install ();
  let seconds = float_of_string Sys.argv.(1) in
  Gate.ready_then_go Sys.argv.(2);
  let t0 = Unix.gettimeofday () in
  let count = Array.make 2 0 in
  let worker k =
    let sink = ref 0 in
    while Unix.gettimeofday () -. t0 < seconds do
      for i = 1 to 10_000 do
        if k = 0 then (let (a, _, _) = alloc_a i in sink := !sink + a)
        else (let (a, _, _, _, _, _, _) = alloc_b i in sink := !sink + a)
      done;
      count.(k) <- count.(k) + 10_000;
      Thread.yield ()
    done;
    ignore !sink
  in
  let ta = Thread.create worker 0 and tb = Thread.create worker 1 in
  Thread.join ta;
  Thread.join tb;
  Printf.printf "a %d words %d\nb %d words %d\n" count.(0) 4 count.(1) 8
