(* Allocations on known lines, for tests/ocaml/test_lines.c: three on
   three lines of one function (combined by the compiler into one
   allocation point), one in a helper inlined into its caller, one in each
   of two anonymous functions, one in the standard library.  Each
   allocation's line carries a "@site NAME" comment, which the test reads
   to know its line; every site allocates a block size of its own.

   lines READY N: the test's handshake (gate.ml), rounds of every site
   until READY.stop exists (the test makes it once sampling is on), then N
   more; prints "rounds N".
   lines truth N: N rounds under the program's own Gc.Memprof at rate 1,
   then one line per distinct callstack, innermost frame first, as
   Printexc reads it: "stack COUNT name file:line[ inlined]|...". *)

let[@inline never] three i =
  let a = Sys.opaque_identity (i, i) in (* @site pair *)
  let b = Sys.opaque_identity (i, i, i) in (* @site triple *)
  let c = Sys.opaque_identity (i, i, i, i) in (* @site quad *)
  let (x, _) = a and (y, _, _) = b and (z, _, _, _) = c in
  x + y + z

let[@inline always] helper i = Sys.opaque_identity (i, i, i, i, i, i, i, i) (* @site helper *)

let[@inline never] outer i =
  let (x, _, _, _, _, _, _, _) = helper i in (* @site outer *)
  x

let lambdas =
  [| (fun i -> let (x, _, _, _, _) = Sys.opaque_identity (i, 1, 2, 3, 4) in x); (* @site lambda1 *)
     (fun i -> let (x, _, _, _, _, _) = Sys.opaque_identity (i, 1, 2, 3, 4, 5) in x) (* @site lambda2 *)
  |]

let[@inline never] apply f i = f i

let short_list = [ 1; 2; 3; 4; 5; 6; 7; 8; 9; 10; 11 ]

(* The innermost frames are List.map's, in the standard library (not a
   tail call, so that this frame stays on the stack). *)
let[@inline never] stdlib_site () =
  let l = List.map succ short_list in (* @site stdlib *)
  Sys.opaque_identity l

let round sink i =
  sink := !sink + three i + outer i + apply lambdas.(0) i + apply lambdas.(1) i;
  sink := !sink + List.length (stdlib_site ())

let rounds n =
  let sink = ref 0 in
  for i = 1 to n do
    round sink i
  done;
  ignore (Sys.opaque_identity !sink)

let frame_text slot =
  let name = Option.value (Printexc.Slot.name slot) ~default:"?" in
  match Printexc.Slot.location slot with
  | None -> name ^ " ?"
  | Some l ->
      Printf.sprintf "%s %s:%d%s" name l.Printexc.filename l.Printexc.line_number
        (if Printexc.Slot.is_inline slot then " inlined" else "")

let stack_text cs =
  match Printexc.backtrace_slots cs with
  | None -> "?"
  | Some slots -> String.concat "|" (Array.to_list (Array.map frame_text slots))

let truth n =
  let seen = Hashtbl.create 16 in
  let record (info : Gc.Memprof.allocation) =
    let k = stack_text info.callstack in
    Hashtbl.replace seen k (1 + Option.value (Hashtbl.find_opt seen k) ~default:0);
    None
  in
  let tracker = { Gc.Memprof.null_tracker with alloc_minor = record; alloc_major = record } in
  ignore (Gc.Memprof.start ~sampling_rate:1.0 ~callstack_size:8 tracker);
  rounds n;
  Gc.Memprof.stop ();
  Hashtbl.iter (fun k c -> Printf.printf "stack %d %s\n" c k) seen

let () =
  let n = int_of_string Sys.argv.(2) in
  if Sys.argv.(1) = "truth" then truth n
  else (
    Memprof_probe.install ();
    Gate.ready_then_go Sys.argv.(1);
    let t0 = Unix.gettimeofday () in
    while not (Gate.arrived (Sys.argv.(1) ^ ".stop") "stop" t0) do
      rounds 100
    done;
    rounds n;
    Printf.printf "rounds %d\n%!" n)
