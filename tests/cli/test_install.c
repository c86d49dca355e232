/*
 * make install DESTDIR=tmp: the tree has the loader, the preload, the Python host, the core
 * with its headers and memprof.pc, the man page, and the findlib package
 * where ocamlfind installs and looks (its printconf destdir);
 * the installed loader attaches; a small C program builds against the core
 * with pkg-config; make uninstall removes every file again.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
#include "exit_codes.h"

/* The test runs under make test: a make of its own must not join its jobserver. */
#define MAKE "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -s"

Test(cli_install, destdir_tree_works)
{
	static const char *const files[] = {
	    "bin/memprof-bpf",		"lib/libmemprof-preload.so",
	    "lib/libmemprof-python.so", "lib/libmemprof.a",
	    "lib/libmemprof.so",	"include/memprof.h",
	    "include/memprof_host.h",	"include/memprof_probe_abi.h",
	    "lib/pkgconfig/memprof.pc", "share/man/man1/memprof-bpf.1",
	};
	/* The findlib package: where findlib installs and looks. */
	static const char *const ocaml_files[] = {"META", "memprof_probe.cmxa", "memprof_probe.cmi",
						  "libmemprof_probe_stubs.a"};
	char dir[128], root[160], cmd[4096], path[512], pid[16], out[256], err[256], fo[256];
	pid_t t;

	tmpdir_make(dir, sizeof(dir));
	snprintf(root, sizeof(root), "%s/root", dir);
	snprintf(cmd, sizeof(cmd), MAKE " install DESTDIR=%s PREFIX=/opt/mp > %s/make.log 2>&1",
		 root, dir);
	cr_assert_eq(system(cmd), 0, "make install failed");
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/opt/mp/%s", root, files[i]);
		cr_expect_eq(access(path, R_OK), 0, "%s not installed", files[i]);
	}
	char destdir[256] = "";
	FILE *p = popen("ocamlfind printconf destdir", "r");

	cr_assert(p && fgets(destdir, sizeof(destdir), p), "ocamlfind printconf destdir");
	pclose(p);
	destdir[strcspn(destdir, "\n")] = 0;
	for (size_t i = 0; i < sizeof(ocaml_files) / sizeof(ocaml_files[0]); i++) {
		snprintf(path, sizeof(path), "%s%s/memprof_probe/%s", root, destdir,
			 ocaml_files[i]);
		cr_expect_eq(access(path, R_OK), 0, "%s not installed", path);
	}
	snprintf(path, sizeof(path), "%s/opt/mp/lib/pkgconfig/memprof.pc", root);
	cr_expect(file_contains(path, "prefix=/opt/mp"));

	/* The installed loader attaches. */
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(fo, sizeof(fo), "%s/p.folded", dir);
	t = cli_trigger(dir);
	cr_assert_gt(t, 0);
	snprintf(pid, sizeof(pid), "%d", (int)t);
	snprintf(cmd, sizeof(cmd),
		 "cd / && %s/opt/mp/bin/memprof-bpf attach %s -d 1 --rate 0.01 -o %s 2>%s", root,
		 pid, fo, err);
	cr_expect_eq(system(cmd), 0, "the installed loader failed");
	kill(t, SIGTERM);
	wait_exit(t);
	cr_expect(file_contains(fo, "site_long_lived"), "no profile from the installed loader");

	/* A program on the core, built with pkg-config from the tree. */
	snprintf(path, sizeof(path), "%s/prog.c", dir);
	{
		FILE *f = fopen(path, "w");

		cr_assert(f);
		fputs("#include <errno.h>\n#include <stdio.h>\n#include <memprof.h>\n"
		      "int main(void)\n{\n\tmemprof_stats s;\n\n"
		      "\tmemprof_get_stats(&s);\n"
		      "\tif (memprof_start(2.0, 8, NULL) != EINVAL)\n\t\treturn 1;\n"
		      "\tputs(\"core ok\");\n\treturn 0;\n}\n",
		      f);
		fclose(f);
	}
	snprintf(cmd, sizeof(cmd),
		 "export PKG_CONFIG_PATH=%s/opt/mp/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=%s && "
		 "cc -std=c11 -o %s/prog %s $(pkg-config --cflags --libs memprof) "
		 "-Wl,-rpath,%s/opt/mp/lib > %s/cc.log 2>&1 && %s/prog > %s",
		 root, root, dir, path, root, dir, dir, out);
	cr_expect_eq(system(cmd), 0, "the program did not build or run on the core");
	cr_expect(file_contains(out, "core ok"));

	snprintf(cmd, sizeof(cmd),
		 MAKE " uninstall DESTDIR=%s PREFIX=/opt/mp > %s/make.log 2>&1 && "
		      "test -z \"$(find %s -type f)\"",
		 root, dir, root);
	cr_expect_eq(system(cmd), 0, "make uninstall left files");
}
