/*
 * The dune route, as an OCaml user takes it: a dune project (Debian's dune)
 * whose executable has (libraries memprof_probe unix), the package found on
 * OCAMLPATH as findlib installs it, builds; the program (the sites program
 * of test_sites.c, its sources copied into the project) is attached through
 * its own probes (never injected), and its sites are named as the user
 * wrote them (Work.make_point, not dune's Dune__exe__Work).  The OCaml 5.3
 * run (tests/ocaml5/test_dune.c) builds the same project with 5.3's
 * compiler first on PATH and no findlib configuration.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ocaml_util.h"
#include "testlib.h"

#if OCAML_UNDER_TEST == 5
/* 5.3's compiler and its package; its own lib dir holds unix. */
#define DUNE_ENV                                                                                   \
	"PATH=%s/build/ocaml5/ocaml/bin:/usr/bin:/bin "                                            \
	"OCAMLPATH=%s/build/ocaml5/lib:%s/build/ocaml5/ocaml/lib/ocaml "                           \
	"OCAMLFIND_CONF=/nonexistent"
#else
#define DUNE_ENV "PATH=/usr/bin:/bin OCAMLPATH=%s/build/ocaml%.0s%.0s"
#endif

Test(ocaml_dune, a_dune_project_with_libraries_memprof_probe, .timeout = 600)
{
	char dir[256], root[512], cmd[8192], env[2048], exe[512], log[600];

	cr_assert_not_null(getcwd(root, sizeof(root)));
	ocaml_tmpdir(dir, sizeof(dir));
	snprintf(env, sizeof(env), DUNE_ENV, root, root, root);
	snprintf(cmd, sizeof(cmd),
		 "cp tests/ocaml/progs/dune/dune-project tests/ocaml/progs/dune/dune "
		 "tests/ocaml/progs/gate.ml tests/ocaml/progs/work.ml tests/ocaml/progs/sites.ml "
		 "%s/ && cd %s && env %s DUNE_CACHE=disabled dune build --root . ./sites.exe "
		 "> dune.log 2>&1",
		 dir, dir, env);
	int rc = system(cmd);
	snprintf(log, sizeof(log), "%s/dune.log", dir);
	char *text = read_file(log);
	cr_assert_eq(rc, 0, "dune build failed: %s", text ? text : "");
	free(text);

	snprintf(exe, sizeof(exe), "%s/_build/default/sites.exe", dir);
	ocaml_check_sites_exe(dir, exe);
}
