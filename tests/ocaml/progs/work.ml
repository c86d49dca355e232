(* Three allocation sites of known sizes and lifetimes (see sites.ml). *)

type point = { x : int; y : int; z : int }          (* 3 fields: 4 words *)

(* Short-lived: dropped at once, dies in the minor heap. *)
let[@inline never] make_point i = { x = i; y = i + 1; z = i + 2 }

(* Medium-lived: kept in a ring, promoted, dies in the major heap. *)
let[@inline never] make_record i = [| i; i; i; i; i |]  (* 5 fields: 6 words *)

(* Long-lived: kept until the end, promoted, still alive at exit. *)
let[@inline never] make_entry i = (i, i, i, i, i, i, i) (* 7 fields: 8 words *)

let words_short = 4
let words_medium = 6
let words_long = 8
