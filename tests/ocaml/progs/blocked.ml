(* blocked: a program that blocks in a system call for as long as its test
   wants: it writes its pid to READY (Gate.write_ready), then opens
   READY.fifo, which blocks until the test opens it for writing, and reads
   one line.  Then it allocates a little and prints "got LINE N".  Built
   without the package (bench/ocaml/no_probe) for the attach of an
   unmodified program blocked for the whole attach.
   usage: blocked READY *)

let () =
  Memprof_probe.install ();
  let ready = Sys.argv.(1) in
  Gate.write_ready ready;
  let ic = open_in (ready ^ ".fifo") in
  let line = input_line ic in
  close_in ic;
  let l = List.init 1000 (fun i -> (i, line)) in
  Printf.printf "got %s %d\n" line (List.length (Sys.opaque_identity l))
