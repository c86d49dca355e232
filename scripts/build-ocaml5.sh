#!/usr/bin/env bash
# Builds OCaml 5.3.0 from its source tree, published on the npm registry as
# the package `ocaml`, and installs it under PREFIX (absolute or relative to
# the current folder).  Used by the build when the OCaml 5.3 tests are built;
# the result is cached: a PREFIX that already holds ocamlopt 5.3.0 is left
# alone.  Needs npm (installed as a Debian package when missing) and a C
# toolchain.  About 5 minutes on 2 cores; OCAML5_JOBS sets make's -j (2).
set -euo pipefail

version=5.3.0
prefix=${1:?usage: build-ocaml5.sh PREFIX}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)

if [ -x "$prefix/bin/ocamlopt" ] &&
	[ "$("$prefix/bin/ocamlopt" -version 2>/dev/null)" = "$version" ]; then
	exit 0
fi

here=$(cd "$(dirname "$0")" && pwd)
if ! command -v npm >/dev/null 2>&1; then
	"$here/install-deps.sh" npm
fi

# The compiler's own build must not see another OCaml's settings, nor the
# outer make's job server.
unset OCAMLLIB CAMLLIB OCAMLPATH OCAMLPARAM OCAMLRUNPARAM CAML_LD_LIBRARY_PATH \
	OCAMLFIND_CONF OCAMLFIND_DESTDIR MAKEFLAGS MFLAGS MAKELEVEL

work="$prefix.src"
rm -rf "$work"
mkdir -p "$work"
log="$work/build.log"
echo "build-ocaml5: building OCaml $version into $prefix (about 5 minutes; log: $log)"
(
	cd "$work"
	npm pack --silent "ocaml@$version" >"$log" 2>&1
	tar xzf "ocaml-$version.tgz"
	cd package
	./configure --prefix="$prefix" >>"$log" 2>&1
	make -j"${OCAML5_JOBS:-2}" >>"$log" 2>&1
	make install >>"$log" 2>&1
) || {
	echo "build-ocaml5: failed, last lines of $log:" >&2
	tail -n 20 "$log" >&2
	exit 1
}
test "$("$prefix/bin/ocamlopt" -version)" = "$version"
# The source tree is not needed any more; keep the log.
mv "$log" "$prefix/build-ocaml5.log"
rm -rf "$work"
echo "build-ocaml5: OCaml $version installed in $prefix"
