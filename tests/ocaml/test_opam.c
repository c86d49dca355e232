/*
 * The opam route, as an OCaml user takes it: memprof_probe.opam installed
 * with `opam pin` and `opam install` into a switch of the compiler under
 * test (tests/ocaml/opam_switch.sh says how the switch is made offline),
 * the package then where that switch's findlib looks, and a user's dune
 * project with (libraries memprof_probe unix) built in the switch
 * (`opam exec -- dune build`) and attached through its own probes.
 * Debian's dune has its library path built in (the system's OCaml), so it
 * is given the switch's lib as OCAMLPATH, as any dune not installed in the
 * switch is.  The opam file passes `opam lint`.  The OCaml 5.3 run
 * (tests/ocaml5/test_opam.c) makes the switch for 5.3's compiler: the
 * package's build picks the 5.x implementation by itself.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ocaml_util.h"
#include "testlib.h"

#if OCAML_UNDER_TEST == 5
/* 5.3's compiler first on PATH; its own lib dir holds its libraries' METAs. */
#define OPAM_PATH "%s/build/ocaml5/ocaml/bin:/usr/bin:/bin"
#define OPAM_METAS "%s/build/ocaml5/ocaml/lib/ocaml"
#else
#define OPAM_PATH "%.0s/usr/bin:/bin"
#define OPAM_METAS "%.0s/usr/lib/ocaml"
#endif

Test(ocaml_opam, opam_install_then_a_dune_project_in_the_switch, .timeout = 600)
{
	char dir[256], root[512], path[1024], metas[1024], env[4096], cmd[8192], log[600],
	    found[600], want[600], exe[600];

	cr_assert_not_null(getcwd(root, sizeof(root)));
	ocaml_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), OPAM_PATH, root);
	snprintf(metas, sizeof(metas), OPAM_METAS, root);
	/* A user's environment: no findlib or OCaml settings of the build's. */
	snprintf(env, sizeof(env), "env -i PATH=%s HOME=%s OPAMROOT=%s/root OPAMCOLOR=never", path,
		 dir, dir);

	snprintf(log, sizeof(log), "%s/opam.log", dir);
	snprintf(cmd, sizeof(cmd), "%s sh tests/ocaml/opam_switch.sh %s %s", env, dir, metas);
	ocaml_run_logged(cmd, log, "opam install memprof_probe");

	snprintf(found, sizeof(found), "%s/found", dir);
	snprintf(cmd, sizeof(cmd),
		 "%s opam exec --switch t -- ocamlfind query memprof_probe > %s 2> %s/query.err",
		 env, found, dir);
	cr_assert_eq(system(cmd), 0, "ocamlfind query memprof_probe failed in the switch");
	char *where = read_file(found);
	snprintf(want, sizeof(want), "%s/root/t/lib/memprof_probe\n", dir);
	cr_assert_str_eq(where ? where : "", want, "the package is not in the switch's lib");
	free(where);

	snprintf(log, sizeof(log), "%s/proj/dune.log", dir);
	snprintf(
	    cmd, sizeof(cmd),
	    "mkdir %s/proj && cp tests/ocaml/progs/dune/dune-project tests/ocaml/progs/dune/dune "
	    "tests/ocaml/progs/gate.ml tests/ocaml/progs/work.ml tests/ocaml/progs/sites.ml "
	    "%s/proj/ "
	    "&& cd %s/proj && %s DUNE_CACHE=disabled OCAMLPATH=%s/root/t/lib:%s "
	    "opam exec --switch t -- dune build --root . ./sites.exe > dune.log 2>&1",
	    dir, dir, dir, env, dir, metas);
	ocaml_run_logged(cmd, log, "dune build in the switch");

	snprintf(exe, sizeof(exe), "%s/proj/_build/default/sites.exe", dir);
	ocaml_check_sites_exe(dir, exe);
}
