(* The OCaml half of the memprof probe adapter, OCaml 4.13
   (memprof_probe5.ml is the 5.x one): the tracker whose callbacks
   fire the probes, the wrapper around a program's own tracker, and the poll
   that starts or stops Gc.Memprof when a tracer attaches or detaches (run
   by the stubs at the runtime's pending-actions point, see
   memprof_probe_stubs.c). *)

external fire_sample : Gc.Memprof.allocation -> int -> float -> int
  = "memprof_probe_sample" [@@noalloc]
external fire_promote : int -> bool = "memprof_probe_promote" [@@noalloc]
external fire_dealloc : int -> int -> unit = "memprof_probe_dealloc" [@@noalloc]
external tracer_up : unit -> bool = "memprof_probe_tracer_up" [@@noalloc]
external requested_rate : unit -> float = "memprof_probe_requested_rate"
external owner : unit -> int = "memprof_probe_owner" [@@noalloc]
external start_for_tracer :
  float -> int -> (int, int) Gc.Memprof.tracker -> unit
  = "memprof_probe_start_for_tracer"
external stop_for_tracer : unit -> unit = "memprof_probe_stop_for_tracer"
external ack : bool -> unit = "memprof_probe_ack" [@@noalloc]
external install_c : unit -> unit = "memprof_probe_install"

(* Values of memprof_probe_abi.h. *)
let kind_minor = 0
let kind_major = 1
(* MEMPROF_PROBE_MAX_STACK + 1: the extra frame tells a cut stack. *)
let max_stack = 129

(* Owners, as in the stubs. *)
let owner_idle = 0
let owner_tracer = 1

let traced id = if id = 0 then None else Some id

(* Gc.Memprof for a tracer alone: a block's data is its probe id. *)
let tracker : (int, int) Gc.Memprof.tracker =
  {
    alloc_minor = (fun a -> traced (fire_sample a kind_minor 0.));
    alloc_major = (fun a -> traced (fire_sample a kind_major 0.));
    promote = (fun id -> if fire_promote id then Some id else None);
    dealloc_minor = (fun id -> fire_dealloc id kind_minor);
    dealloc_major = (fun id -> fire_dealloc id kind_major);
  }

(* The program's own tracker, with the probes fired around it.  A block the
   tracer saw stays tracked after the program's callback dropped it (data
   None), so its promotion and death still reach the tracer. *)
let wrap (t : ('a, 'b) Gc.Memprof.tracker) :
    (int * 'a option, int * 'b option) Gc.Memprof.tracker =
  let keep id user =
    match user with
    | Some _ -> Some (id, user)
    | None -> if id <> 0 then Some (id, None) else None
  in
  {
    alloc_minor =
      (fun a ->
        let id = fire_sample a kind_minor 0. in
        keep id (t.alloc_minor a));
    alloc_major =
      (fun a ->
        let id = fire_sample a kind_major 0. in
        keep id (t.alloc_major a));
    promote =
      (fun (id, d) ->
        let id = if fire_promote id then id else 0 in
        keep id (match d with Some d -> t.promote d | None -> None));
    dealloc_minor =
      (fun (id, d) ->
        fire_dealloc id kind_minor;
        match d with Some d -> t.dealloc_minor d | None -> ());
    dealloc_major =
      (fun (id, d) ->
        fire_dealloc id kind_major;
        match d with Some d -> t.dealloc_major d | None -> ());
  }

let poll () =
  try
    let up = tracer_up () in
    let o = owner () in
    if up && o = owner_idle then (
      try start_for_tracer (requested_rate ()) max_stack tracker
      with Failure _ | Invalid_argument _ -> ())
    else if (not up) && o = owner_tracer then stop_for_tracer ();
    ack up
  with _ -> ()

let sampling_for_tracer () = owner () = owner_tracer

let installed = ref false

let install () =
  if not !installed then (
    installed := true;
    Callback.register "memprof_probe.poll" poll;
    Callback.register "memprof_probe.wrap" (Obj.repr wrap);
    install_c ())
