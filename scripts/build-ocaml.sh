#!/usr/bin/env bash
# Builds an OCaml compiler from its source tree, published on the npm
# registry as the package `ocaml`, and installs it under PREFIX (absolute or
# relative to the current folder).  VERSION is the compiler's own version:
#   5.3.0   the OCaml 5 the tests run (make ocaml5, part of make test)
#   4.14.1  and 5.1.0, the other versions the package is built and checked
#           with (make test-long: tests/ocaml-versions/)
# The npm registry names some of these trees differently (its ocaml@4.14.1000
# holds 4.14.1, ocaml@5.1.4 holds 5.1.0): the table below maps them, and the
# installed compiler's own -version is checked against VERSION.
# The result is cached: a PREFIX that already holds ocamlopt VERSION is left
# alone.  Needs npm (installed as a Debian package when missing) and a C
# toolchain.  About 5 minutes on 2 cores; OCAML_BUILD_JOBS sets make's -j (2).
set -euo pipefail

version=${1:?usage: build-ocaml.sh VERSION PREFIX}
prefix=${2:?usage: build-ocaml.sh VERSION PREFIX}
case "$version" in
5.3.0) npm_version=5.3.0 ;;
4.14.1) npm_version=4.14.1000 ;;
5.1.0) npm_version=5.1.4 ;;
*)
	echo "build-ocaml: no source known for OCaml $version (known: 5.3.0, 4.14.1, 5.1.0)" >&2
	exit 2
	;;
esac
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
echo "build-ocaml: building OCaml $version into $prefix (about 5 minutes; log: $log)"
(
	cd "$work"
	npm pack --silent "ocaml@$npm_version" >"$log" 2>&1
	tar xzf "ocaml-$npm_version.tgz"
	cd package
	# Only the compilers, the runtime and the libraries are needed.
	./configure --prefix="$prefix" --disable-ocamldoc --disable-debugger \
		--disable-ocamltest >>"$log" 2>&1
	make -j"${OCAML_BUILD_JOBS:-2}" >>"$log" 2>&1
	make install >>"$log" 2>&1
) || {
	echo "build-ocaml: failed, last lines of $log:" >&2
	tail -n 20 "$log" >&2
	exit 1
}
got=$("$prefix/bin/ocamlopt" -version)
if [ "$got" != "$version" ]; then
	echo "build-ocaml: ocaml@$npm_version built OCaml $got, not $version" >&2
	exit 1
fi
# The source tree is not needed any more; keep the log.
mv "$log" "$prefix/build-ocaml.log"
rm -rf "$work"
echo "build-ocaml: OCaml $version installed in $prefix"
