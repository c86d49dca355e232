(* Stand-in for the memprof_probe package, to build the same OCaml program
   without the adapter (the detached-cost baseline of bench table 5). *)
let install () = ()
