(** Make this program attachable by [memprof-bpf attach PID].

    Link the [memprof_probe] findlib package and call [install ()] once at
    start-up.  Until a tracer attaches, nothing is sampled: the program pays
    one helper thread that reads a word every 50 ms.  When [memprof-bpf]
    attaches, the program starts [Gc.Memprof] at the tracer's rate (within
    50 ms, at its next allocation) and fires the memprof USDT probes from
    its callbacks; when it detaches, sampling stops.

    A program that runs [Gc.Memprof] itself keeps doing so: its profile
    takes precedence, and an attached tracer sees its samples at its rate. *)

val install : unit -> unit
(** Start noticing tracers.  Idempotent.  Call it from the main thread. *)

val sampling_for_tracer : unit -> bool
(** Whether [Gc.Memprof] currently runs for an attached tracer. *)
