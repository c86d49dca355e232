#!/bin/sh
# The opam route of tests/ocaml/test_opam.c, as a user takes it: an opam
# root (DIR/root) with a switch "t" for the compiler first on PATH, then
# `opam pin` of a copy of this tree (the files git knows, as a checkout has
# them) and `opam install memprof_probe`, which runs memprof_probe.opam's
# build and install.  Offline, the switch's repository (DIR/repo) is local
# and holds two stand-ins: `ocaml`, a compiler package for the compiler on
# PATH (what ocaml-system is), and `ocamlfind`, Debian's ocamlfind
# configured for the switch (destdir the switch's lib, METAS for the
# compiler's own libraries).  Run from the tree's root.  Output: opam's, to
# DIR/opam.log.
# usage: opam_switch.sh DIR METAS
set -eu
dir=$1
metas=$2
version=$(ocamlopt -version)
repo=$dir/repo
log=$dir/opam.log

mkdir -p "$repo/packages/ocaml/ocaml.$version" "$repo/packages/ocamlfind/ocamlfind.1.9.6/files"
echo 'opam-version: "2.0"' >"$repo/repo"
cat >"$repo/packages/ocaml/ocaml.$version/opam" <<END
opam-version: "2.0"
synopsis: "Stand-in for ocaml and ocaml-system: the compiler on PATH"
flags: compiler
END
cat >"$repo/packages/ocamlfind/ocamlfind.1.9.6/opam" <<END
opam-version: "2.0"
synopsis: "Stand-in for ocamlfind: Debian's, configured for the switch"
depends: ["ocaml"]
install: [["sh" "install.sh" "%{lib}%" "%{bin}%"]]
END
cat >"$repo/packages/ocamlfind/ocamlfind.1.9.6/files/install.sh" <<END
set -e
mkdir -p "\$1" "\$2"
printf 'destdir="%s"\npath="%s:%s"\n' "\$1" "\$1" "$metas" >"\$1/findlib.conf"
printf '#!/bin/sh\nOCAMLFIND_CONF=%s/findlib.conf exec /usr/bin/ocamlfind "\$@"\n' "\$1" >"\$2/ocamlfind"
chmod 755 "\$2/ocamlfind"
END

mkdir "$dir/src"
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$dir/src"

export OPAMROOT="$dir/root" OPAMYES=1 OPAMCOLOR=never OPAMNODEPEXTS=0
unset OCAMLFIND_CONF OCAMLPATH OCAMLLIB CAMLLIB MAKEFLAGS MFLAGS MAKELEVEL
{
	opam lint "$dir/src/memprof_probe.opam"
	opam init --bare -n --disable-sandboxing local "$repo"
	opam switch create t "ocaml.$version"
	opam install --switch t ocamlfind
	opam pin add -n --switch t memprof_probe "$dir/src"
	opam install --switch t memprof_probe
} >"$log" 2>&1
