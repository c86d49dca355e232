(* The OCaml half of the memprof probe adapter, OCaml 5.x (the 5.x package
   installs it as memprof_probe.ml; memprof_probe.ml is the 4.13 one).

   Profiles belong to domains.  Each domain keeps, in domain-local storage,
   who samples in it (nobody, the adapter for a tracer, or the program),
   the tracer's profile, and the tracer's profiles stopped when the program
   took over.  Those keep their blocks tracked until they die, so their
   promote and dealloc still reach the tracer; the adapter discards them
   at detach.  The stubs run [poll] in every domain when a tracer attaches
   or detaches, and route the program's Gc.Memprof.start and stop through
   [program_start] and [program_stop].

   A domain's state arrives late.  Domain.spawn's body first creates the
   new domain's storage, then sets the keys split from the parent, and
   both steps allocate, so pending actions (and [poll]) can run before
   either: the stubs do not call [poll] before the storage exists, and
   [poll] leaves a domain whose key is not set yet alone until its next
   pending action.  A domain that started a profile of its own stops it
   when it exits. *)

external fire_sample : Gc.Memprof.allocation -> int -> float -> int
  = "memprof_probe_sample" [@@noalloc]
external fire_promote : int -> bool = "memprof_probe_promote" [@@noalloc]
external fire_dealloc : int -> int -> unit = "memprof_probe_dealloc" [@@noalloc]
external tracer_up : unit -> bool = "memprof_probe_tracer_up" [@@noalloc]
external requested_rate : unit -> float = "memprof_probe_requested_rate"
external real_start :
  float -> int -> ('a, 'b) Gc.Memprof.tracker -> Gc.Memprof.t
  = "memprof_probe_real_start"
external real_stop : unit -> unit = "memprof_probe_real_stop"
external sampling : Gc.Memprof.t -> bool = "memprof_probe_profile_sampling"
  [@@noalloc]
external owner_change : int -> int -> float -> unit
  = "memprof_probe_owner_change" [@@noalloc]
external request_poll : unit -> unit = "memprof_probe_request_poll" [@@noalloc]
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
let owner_program = 2
(* Not owners (the stubs never see these): a spawned domain whose key has
   not been set from its parent's yet, and a domain that exited. *)
let owner_unset = 3
let owner_gone = 4

let traced id = if id = 0 then None else Some id

(* Gc.Memprof for a tracer alone: a block's data is its probe id. *)
let tracker rate : (int, int) Gc.Memprof.tracker =
  {
    alloc_minor = (fun a -> traced (fire_sample a kind_minor rate));
    alloc_major = (fun a -> traced (fire_sample a kind_major rate));
    promote = (fun id -> if fire_promote id then Some id else None);
    dealloc_minor = (fun id -> fire_dealloc id kind_minor);
    dealloc_major = (fun id -> fire_dealloc id kind_major);
  }

(* The program's own tracker, with the probes fired around it.  A block the
   tracer saw stays tracked after the program's callback dropped it (data
   None), so its promotion and death still reach the tracer. *)
let wrap rate (t : ('a, 'b) Gc.Memprof.tracker) :
    (int * 'a option, int * 'b option) Gc.Memprof.tracker =
  let keep id user =
    match user with
    | Some _ -> Some (id, user)
    | None -> if id <> 0 then Some (id, None) else None
  in
  {
    alloc_minor =
      (fun a ->
        let id = fire_sample a kind_minor rate in
        keep id (t.alloc_minor a));
    alloc_major =
      (fun a ->
        let id = fire_sample a kind_major rate in
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

type domain = {
  mutable owner : int;
  mutable profile : Gc.Memprof.t option;  (** the tracer's, while owner_tracer *)
  mutable mine : bool;  (** [profile] was started in this domain *)
  mutable retired : Gc.Memprof.t list;  (** the tracer's, stopped: to discard *)
  mutable exit_hook : bool;  (** [domain_exit] is registered *)
}

let state owner =
  { owner; profile = None; mine = false; retired = []; exit_hook = false }

let fresh () = state owner_idle

(* A domain spawned while its parent samples joins the parent's profile.
   The key is read before it is set only in a domain Domain.spawn has not
   finished setting up (or one spawned before this module was
   initialised): such a domain is unset until its parent's split value
   replaces this one. *)
let key =
  Domain.DLS.new_key
    ~split_from_parent:(fun p ->
      if p.owner = owner_tracer then { (fresh ()) with owner = owner_tracer; profile = p.profile }
      else fresh ())
    (fun () -> if Domain.is_main_domain () then fresh () else state owner_unset)

(* Stopped profiles of the tracer's whose domain exited: the next domain
   to see the tracer gone discards them. *)
let orphans : Gc.Memprof.t list Atomic.t = Atomic.make []

let rec add_orphans = function
  | [] -> ()
  | l ->
      let old = Atomic.get orphans in
      if not (Atomic.compare_and_set orphans old (List.rev_append l old)) then add_orphans l

let discard_all l = List.iter (fun p -> try Gc.Memprof.discard p with _ -> ()) l

(* This domain stops sampling for the tracer; the profile keeps following
   its blocks until it is discarded. *)
let drop_tracer d =
  (match d.profile with
  | Some p ->
      if sampling p then (try real_stop () with _ -> ());
      d.retired <- p :: d.retired
  | None -> ());
  if d.mine then owner_change owner_tracer owner_idle 0.;
  d.owner <- owner_idle;
  d.profile <- None;
  d.mine <- false

let discard_retired d =
  discard_all d.retired;
  d.retired <- [];
  discard_all (Atomic.exchange orphans [])

(* A spawned domain exits (Domain.at_exit): the profile it started stops
   (domains that joined it are polled, to start their own), the count of
   who samples forgets it, and its stopped profiles wait for the tracer's
   detach (or are discarded now if it is gone). *)
let domain_exit d () =
  try
    let stopped = d.owner = owner_tracer && d.mine in
    if stopped then drop_tracer d
    else if d.owner = owner_program then owner_change owner_program owner_idle 0.;
    d.owner <- owner_gone;
    d.profile <- None;
    if tracer_up () then add_orphans d.retired else discard_all d.retired;
    d.retired <- [];
    if stopped then request_poll ()
  with _ -> ()

(* Registered by a domain before it starts a profile (a domain that only
   joined its parent's has nothing to clean up: the profile's own domain
   stops it and discards it). *)
let hook_exit d =
  if (not d.exit_hook) && not (Domain.is_main_domain ()) then (
    d.exit_hook <- true;
    Domain.at_exit (domain_exit d))

(* A domain acts on the tracer's presence. *)
let act d =
  let up = tracer_up () in
  (match d.profile with
  | Some p when d.owner = owner_tracer && not (sampling p) ->
      (* stopped elsewhere (a domain sharing it handed it to the program) *)
      drop_tracer d
  | _ -> ());
  if up && d.owner = owner_idle then (
    let rate = requested_rate () in
    hook_exit d;
    match real_start rate max_stack (tracker rate) with
    | p ->
        d.owner <- owner_tracer;
        d.profile <- Some p;
        d.mine <- true;
        owner_change owner_idle owner_tracer rate
    | exception (Failure _ | Invalid_argument _) ->
        (* this domain already samples: a profile it joined *)
        ())
  else if not up then (
    if d.owner = owner_tracer then drop_tracer d;
    discard_retired d);
  ack up

(* Run by the stubs at a pending action of every domain, once its storage
   exists; false: run it again at the next one (the key is not set yet). *)
let poll () =
  try
    let d = Domain.DLS.get key in
    if d.owner = owner_unset then false
    else (
      if d.owner <> owner_gone then act d;
      true)
  with _ -> true

(* The program's Gc.Memprof.start: it takes over from the tracer. *)
let program_start rate size t =
  let d = Domain.DLS.get key in
  let took_over = d.owner = owner_tracer in
  if took_over then drop_tracer d;
  hook_exit d;
  match real_start rate size (wrap rate t) with
  | p ->
      d.owner <- owner_program;
      owner_change owner_idle owner_program rate;
      (* other domains sharing the tracer's profile start one of their own *)
      if took_over then request_poll ();
      p
  | exception e ->
      request_poll ();
      raise e

(* The program's Gc.Memprof.stop: sampling goes back to the tracer. *)
let program_stop () =
  let d = Domain.DLS.get key in
  if d.owner = owner_tracer then failwith "Gc.Memprof.stop: no profile running."
  else if d.owner = owner_program then (
    let release () =
      d.owner <- owner_idle;
      owner_change owner_program owner_idle 0.;
      request_poll ()
    in
    match real_stop () with
    | () -> release ()
    | exception e ->
        release ();
        raise e)
  else real_stop ()

let sampling_for_tracer () = (Domain.DLS.get key).owner = owner_tracer

let installed = Atomic.make false

let install () =
  if not (Atomic.exchange installed true) then (
    Callback.register "memprof_probe.poll" poll;
    Callback.register "memprof_probe.start" program_start;
    Callback.register "memprof_probe.stop" program_stop;
    install_c ())
