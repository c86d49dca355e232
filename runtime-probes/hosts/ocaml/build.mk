# runtime-probes/hosts/ocaml: the OCaml host, a findlib package that makes
# any native OCaml 4.13/4.14 or 5.3 program attachable by memprof-bpf.  It is built
# into build/ocaml/memprof_probe/ for the compiler `ocamlfind ocamlopt` names
# (Debian's, or an opam switch's: memprof_probe.opam runs `make ocaml-package`),
# so that a program builds with
#   OCAMLPATH=$PWD/build/ocaml ocamlfind ocamlopt -g -package memprof_probe,unix -linkpkg app.ml -o app
# and calls Memprof_probe.install () once.  That compiler's version picks the
# implementation (OCAML_FAMILY below): memprof_probe.ml for 4.13, 4.14 and
# 5.0-5.2 (their Gc.Memprof has the 4.x interface; on 5.0-5.2 its start
# fails, and install () says sampling is not available), memprof_probe5.ml for
# 5.3 on (the 5.3 interface).  The C stubs fire the probes of
# memprof_probe_abi.h; the link wraps three runtime functions (OCAML_WRAP4/5,
# recorded in the .cmxa: memprof_probe_stubs.c says why) and exports the
# control block.
# Tests: tests/ocaml/ (real OCaml programs of tests/ocaml/progs/, attached
# with the loader).
# OCaml 5.3: the second half of this file builds the compiler from the npm
# registry (scripts/build-ocaml.sh 5.3.0, once per clean tree, about 5 minutes),
# the same package for it under build/ocaml5/lib/, and the same test
# programs; tests/ocaml5/ runs tests/ocaml's scenarios on them.

OCAML_DIR := runtime-probes/hosts/ocaml
OCAML_PKG := $(BUILD)/ocaml/memprof_probe
OCAML_STUBS_SRCS := $(OCAML_DIR)/memprof_probe_stubs.c $(OCAML_DIR)/memprof_probe_callstack.c \
	$(OCAML_DIR)/memprof_probe_gc.c $(OCAML_DIR)/memprof_probe_unavailable.c
OCAML_STUBS_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(OCAML_STUBS_SRCS))
OCAMLFIND := ocamlfind
OCAML_COMMA := ,
# Asked once, when first used (ocaml-nox is installed by the deps step).
ocaml_where = $(or $(OCAML_WHERE),$(eval OCAML_WHERE := $(shell $(OCAMLFIND) ocamlc -where))$(OCAML_WHERE))
OCAML_WRAP_COMMON := -Wl,--wrap=caml_memprof_start,--wrap=caml_memprof_stop \
	-Wl,--export-dynamic-symbol=memprof_probe_control \
	-Wl,--export-dynamic-symbol=memprof_probe_ocaml_stdlib
# The finaliser runner wrapped: 4.x calls it caml_final_do_calls_exn, 5.x
# caml_final_do_calls_res.
OCAML_WRAP4 := $(OCAML_WRAP_COMMON) -Wl,--wrap=caml_final_do_calls_exn
OCAML_WRAP5 := $(OCAML_WRAP_COMMON) -Wl,--wrap=caml_final_do_calls_res
# In a recipe: the family of the compiler ocamlfind names, "4" (4.13, 4.14),
# "5.0" (5.0-5.2: the 4.x Gc.Memprof interface, whose start fails) or "5"
# (5.3 on); any other version stops the build with one line.  Asked when the
# recipe runs, not when make reads this file: on a fresh machine ocamlfind is
# installed by the deps step, after that.
OCAML_FAMILY = $$(v=$$($(OCAMLFIND) ocamlopt -version) && case "$$v" in \
	4.1[34].*) echo 4;; 5.[012].*) echo 5.0;; 5.*|[6-9].*) echo 5;; \
	*) echo "memprof_probe: OCaml $$v is not supported (4.13, 4.14, 5.x)" >&2; exit 1;; esac)
OCAML_PKG_FILES := $(addprefix $(OCAML_PKG)/,META memprof_probe.cmxa memprof_probe.a \
	memprof_probe.cmi memprof_probe.cmx memprof_probe.mli libmemprof_probe_stubs.a)

# The stdlib's directory is recorded for the loader (memprof_probe_abi.h).
EXTRA_CFLAGS_$(OCAML_DIR)/ = -I$(call ocaml_where) \
	-DMEMPROF_OCAML_STDLIB_DIR='"$(call ocaml_where)"'

ALL_TARGETS += $(OCAML_PKG_FILES)

$(OCAML_PKG)/libmemprof_probe_stubs.a: $(OCAML_STUBS_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(OCAML_PKG)/META: $(OCAML_DIR)/META
	@mkdir -p $(@D)
	cp $< $@

$(OCAML_PKG)/memprof_probe.mli: $(OCAML_DIR)/memprof_probe.mli
	@mkdir -p $(@D)
	cp $< $@

$(OCAML_PKG)/memprof_probe.cmi: $(OCAML_DIR)/memprof_probe.mli | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(OCAMLFIND) ocamlopt -g -c -o $@ $<

# The implementation for the compiler's family, compiled as memprof_probe.ml.
$(BUILD)/ocaml/src/memprof_probe.ml: $(OCAML_DIR)/memprof_probe.ml $(OCAML_DIR)/memprof_probe5.ml \
		| $(DEPS_STAMP)
	@mkdir -p $(@D)
	family=$(OCAML_FAMILY) && case $$family in 5) src=$(OCAML_DIR)/memprof_probe5.ml;; \
		*) src=$(OCAML_DIR)/memprof_probe.ml;; esac && cp $$src $@

$(OCAML_PKG)/memprof_probe.cmx: $(BUILD)/ocaml/src/memprof_probe.ml $(OCAML_PKG)/memprof_probe.cmi
	$(OCAMLFIND) ocamlopt -g -I $(@D) -c -o $@ $<

# The .cmxa records the C library and the link options, and is always linked
# (-linkall): a program that never names Memprof_probe still gets the
# functions the link options wrap, so it links.
$(OCAML_PKG)/memprof_probe.a: $(OCAML_PKG)/memprof_probe.cmxa
$(OCAML_PKG)/memprof_probe.cmxa: $(OCAML_PKG)/memprof_probe.cmx $(OCAML_PKG)/libmemprof_probe_stubs.a \
		$(OCAML_DIR)/build.mk
	family=$(OCAML_FAMILY) && case $$family in 4) wrap="$(OCAML_WRAP4)";; \
		5) wrap="$(OCAML_WRAP5)";; *) wrap=;; esac && \
	$(OCAMLFIND) ocamlopt -a -linkall -o $@ $< -cclib -lmemprof_probe_stubs \
		$${wrap:+-ccopt "$$wrap"}

# The package alone, for the compiler ocamlfind names (memprof_probe.opam).
.PHONY: ocaml-package
ocaml-package: $(OCAML_PKG_FILES)

# ---- Test programs: tests/ocaml/progs/, built with the README's command ----
OCAML_TEST_PROGS_DIR := $(BUILD)/tests/ocaml/progs
OCAML_TEST_PROGS := $(addprefix $(OCAML_TEST_PROGS_DIR)/,sites sites-nog own_memprof threads_sites \
	fork_sites handover sizes lines)
# $(call ocaml_prog,FLAGS,PACKAGES,SOURCES): sources are copied to a folder of
# the program's own, so no compiler output lands in the source tree.
ocaml_prog = rm -rf $@.src && mkdir -p $@.src && cp $(3) $@.src/ && \
	cd $@.src && OCAMLPATH=$(abspath $(BUILD)/ocaml) $(OCAMLFIND) ocamlopt $(1) \
	-package memprof_probe,$(2) -linkpkg $(notdir $(3)) -o $(notdir $@).tmp && \
	mv -f $(notdir $@).tmp ../$(notdir $@)

# Every program starts with the test's handshake (gate.ml).
OCAML_GATE := tests/ocaml/progs/gate.ml
OCAML_SITES_SRCS := $(OCAML_GATE) tests/ocaml/progs/work.ml tests/ocaml/progs/sites.ml

# Blocks: one allocation site per block size, Blocks.w001 .. Blocks.w300
# (tests/ocaml/progs/sizes.ml says what they do), for both compilers.
OCAML_BLOCKS_ML := $(BUILD)/tests/ocaml/gen/blocks.ml
OCAML_SIZES_SRCS := $(OCAML_GATE) $(OCAML_BLOCKS_ML) tests/ocaml/progs/sizes.ml

$(OCAML_BLOCKS_ML): $(OCAML_DIR)/build.mk
	@mkdir -p $(@D)
	{ echo '(* Generated by $(OCAML_DIR)/build.mk for tests/ocaml/progs/sizes.ml. *)'; \
	  for w in $$(seq 1 300); do printf '%s%03d%s%d%s\n' 'let[@inline never] w' $$w \
	    ' n = for _ = 1 to n do ignore (Sys.opaque_identity (Array.make ' $$w ' 0)) done'; \
	  done; \
	  printf 'let sites = [| ignore'; \
	  for w in $$(seq 1 300); do printf '; w%03d' $$w; done; \
	  echo ' |]'; } > $@.tmp && mv -f $@.tmp $@

$(OCAML_TEST_PROGS_DIR)/sizes: $(OCAML_SIZES_SRCS) $(OCAML_PKG_FILES)
	$(call ocaml_prog,-g,unix,$(OCAML_SIZES_SRCS))

$(OCAML_TEST_PROGS_DIR)/sites: $(OCAML_SITES_SRCS) $(OCAML_PKG_FILES)
	$(call ocaml_prog,-g,unix,$(OCAML_SITES_SRCS))

$(OCAML_TEST_PROGS_DIR)/sites-nog: $(OCAML_SITES_SRCS) $(OCAML_PKG_FILES)
	$(call ocaml_prog,,unix,$(OCAML_SITES_SRCS))

$(OCAML_TEST_PROGS_DIR)/own_memprof: tests/ocaml/progs/own_memprof.ml $(OCAML_GATE) $(OCAML_PKG_FILES)
	$(call ocaml_prog,-g,unix,$(OCAML_GATE) $<)

$(OCAML_TEST_PROGS_DIR)/threads_sites: tests/ocaml/progs/threads_sites.ml $(OCAML_GATE) $(OCAML_PKG_FILES)
	$(call ocaml_prog,-g -thread,unix$(OCAML_COMMA)threads.posix,$(OCAML_GATE) $<)

$(OCAML_TEST_PROGS_DIR)/fork_sites: tests/ocaml/progs/fork_sites.ml $(OCAML_GATE) $(OCAML_PKG_FILES)
	$(call ocaml_prog,-g,unix,$(OCAML_GATE) $<)

$(OCAML_TEST_PROGS_DIR)/handover: tests/ocaml/progs/handover.ml $(OCAML_GATE) $(OCAML_PKG_FILES)
	$(call ocaml_prog,-g,unix,$(OCAML_GATE) $<)

$(OCAML_TEST_PROGS_DIR)/no_install: tests/ocaml/progs/no_install.ml $(OCAML_GATE) $(OCAML_PKG_FILES)
	$(call ocaml_prog,-g,unix,$(OCAML_GATE) $<)

$(OCAML_TEST_PROGS_DIR)/lines: tests/ocaml/progs/lines.ml $(OCAML_GATE) $(OCAML_PKG_FILES)
	$(call ocaml_prog,-g,unix,$(OCAML_GATE) $<)

ALL_TARGETS += $(OCAML_TEST_PROGS)


# ---- Test settings (tests/build.mk) ----
EXTRA_CFLAGS_tests/ocaml/ := -Iuserspace -Ibpf -Itests/attach -DOCAML_UNDER_TEST=4
TEST_NEEDS_ocaml = $(OCAML_TEST_PROGS) $(OCAML_BYTE_PLAIN) $(OCAML_FAKE_RUNTIMES) \
	$(OCAML_TEST_PROGS_DIR)/no_install \
	$(OCAML_BENCH_PLAIN) $(LOADER)
TEST_LIBS_ocaml = $(LOADER_LIB_OBJS) $(BUILD)/obj/tests/attach/attach_util.o
TEST_LDLIBS_ocaml = $(LOADER_LIBS)

# ---- Bench (table 5): the sites program without the adapter ----
OCAML_BENCH_PLAIN := $(BUILD)/bench/ocaml-sites-plain
OCAML_PLAIN_SRCS := bench/ocaml/no_probe/memprof_probe.ml $(OCAML_SITES_SRCS)
$(OCAML_BENCH_PLAIN): $(OCAML_PLAIN_SRCS) | $(DEPS_STAMP)
	rm -rf $@.src && mkdir -p $@.src && cp $(OCAML_PLAIN_SRCS) $@.src/ && \
	cd $@.src && $(OCAMLFIND) ocamlopt -g -package unix -linkpkg \
	$(notdir $(OCAML_PLAIN_SRCS)) -o $(notdir $@).tmp && mv -f $(notdir $@).tmp ../$(notdir $@)
ALL_TARGETS += $(OCAML_BENCH_PLAIN)

# Programs never linked with memprof_probe (tests/ocaml/test_unmodified.c):
# the sites program in bytecode, and stand-ins for native runtimes of
# versions not built here (tests/ocaml/progs/fake_runtime.c).  The native
# one is the bench's (OCAML_BENCH_PLAIN, above).
OCAML_BYTE_PLAIN := $(OCAML_TEST_PROGS_DIR)/sites-plain.byte
OCAML_FAKE_RUNTIMES := $(addprefix $(OCAML_TEST_PROGS_DIR)/fake-ocaml-,5.1.1 4.12.0)
$(OCAML_BYTE_PLAIN): $(OCAML_PLAIN_SRCS) | $(DEPS_STAMP)
	rm -rf $@.src && mkdir -p $@.src && cp $(OCAML_PLAIN_SRCS) $@.src/ && \
	cd $@.src && $(OCAMLFIND) ocamlc -package unix -linkpkg \
	$(notdir $(OCAML_PLAIN_SRCS)) -o $(notdir $@).tmp && mv -f $(notdir $@).tmp ../$(notdir $@)
$(OCAML_TEST_PROGS_DIR)/fake-ocaml-%: tests/ocaml/progs/fake_runtime.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -rdynamic -DOCAML_VERSION_TEXT='"$*"' $< -o $@.tmp && mv -f $@.tmp $@
ALL_TARGETS += $(OCAML_BYTE_PLAIN) $(OCAML_FAKE_RUNTIMES) $(OCAML_TEST_PROGS_DIR)/no_install
BENCH_DEPS += $(OCAML_BENCH_PLAIN) $(OCAML_TEST_PROGS)

# ---- OCaml 5.3: the compiler, the package, the test programs ----
OCAML5_PREFIX := $(BUILD)/ocaml5/ocaml
OCAML5_OPT := $(OCAML5_PREFIX)/bin/ocamlopt
OCAML5_LIB := $(BUILD)/ocaml5/lib
OCAML5_PKG := $(OCAML5_LIB)/memprof_probe
OCAML5_SRC := $(BUILD)/ocaml5/src
OCAML5_STUBS_OBJ := $(patsubst $(OCAML_DIR)/%.c,$(BUILD)/ocaml5/obj/%.o,$(OCAML_STUBS_SRCS))
OCAML5_WRAP := $(OCAML_WRAP5)
OCAML5_PKG_FILES := $(addprefix $(OCAML5_PKG)/,META memprof_probe.cmxa memprof_probe.a \
	memprof_probe.cmi memprof_probe.cmx memprof_probe.mli libmemprof_probe_stubs.a)

.PHONY: ocaml5
ocaml5: $(OCAML5_PKG_FILES)

# Built once per clean tree (the script leaves an installed 5.3.0 alone).
$(OCAML5_OPT): | $(DEPS_STAMP)
	./scripts/build-ocaml.sh 5.3.0 $(OCAML5_PREFIX)

$(OCAML5_STUBS_OBJ): $(BUILD)/ocaml5/obj/%.o: $(OCAML_DIR)/%.c $(OCAML_DIR)/memprof_probe_callstack.h \
		$(OCAML_DIR)/memprof_probe_gc.h $(PUBLIC_HDRS) | $(OCAML5_OPT)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -isystem $(OCAML5_PREFIX)/lib/ocaml \
		-DMEMPROF_OCAML_STDLIB_DIR='"$(abspath $(OCAML5_PREFIX)/lib/ocaml)"' -c $< -o $@

$(OCAML5_PKG)/libmemprof_probe_stubs.a: $(OCAML5_STUBS_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(OCAML5_PKG)/META: $(OCAML_DIR)/META
	@mkdir -p $(@D)
	cp $< $@

$(OCAML5_PKG)/memprof_probe.mli: $(OCAML_DIR)/memprof_probe.mli
	@mkdir -p $(@D)
	cp $< $@

# The 5.x implementation is compiled as memprof_probe.ml.
$(OCAML5_SRC)/memprof_probe.ml: $(OCAML_DIR)/memprof_probe5.ml
	@mkdir -p $(@D)
	cp $< $@

$(OCAML5_PKG)/memprof_probe.cmi: $(OCAML_DIR)/memprof_probe.mli | $(OCAML5_OPT)
	@mkdir -p $(@D)
	$(OCAML5_OPT) -g -c -o $@ $<

$(OCAML5_PKG)/memprof_probe.cmx: $(OCAML5_SRC)/memprof_probe.ml $(OCAML5_PKG)/memprof_probe.cmi
	$(OCAML5_OPT) -g -I $(@D) -c -o $@ $<

$(OCAML5_PKG)/memprof_probe.a: $(OCAML5_PKG)/memprof_probe.cmxa
$(OCAML5_PKG)/memprof_probe.cmxa: $(OCAML5_PKG)/memprof_probe.cmx \
		$(OCAML5_PKG)/libmemprof_probe_stubs.a $(OCAML_DIR)/build.mk
	$(OCAML5_OPT) -a -linkall -o $@ $< -cclib -lmemprof_probe_stubs -ccopt "$(OCAML5_WRAP)"

# The test programs, built with the README's 5.3 command.
OCAML5_TEST_PROGS_DIR := $(BUILD)/tests/ocaml5/progs
OCAML5_TEST_PROGS := $(addprefix $(OCAML5_TEST_PROGS_DIR)/,$(notdir $(OCAML_TEST_PROGS)))
# $(call ocaml5_prog,FLAGS,LIBRARIES,SOURCES), as ocaml_prog.
ocaml5_prog = rm -rf $@.src && mkdir -p $@.src && cp $(3) $@.src/ && \
	cd $@.src && $(abspath $(OCAML5_OPT)) $(1) -I $(abspath $(OCAML5_PKG)) $(2) \
	memprof_probe.cmxa $(notdir $(3)) -o $(notdir $@).tmp && \
	mv -f $(notdir $@).tmp ../$(notdir $@)
OCAML5_UNIX := -I +unix unix.cmxa

$(OCAML5_TEST_PROGS_DIR)/sizes: $(OCAML_SIZES_SRCS) $(OCAML5_PKG_FILES)
	$(call ocaml5_prog,-g,$(OCAML5_UNIX),$(OCAML_SIZES_SRCS))

$(OCAML5_TEST_PROGS_DIR)/sites: $(OCAML_SITES_SRCS) $(OCAML5_PKG_FILES)
	$(call ocaml5_prog,-g,$(OCAML5_UNIX),$(OCAML_SITES_SRCS))

$(OCAML5_TEST_PROGS_DIR)/sites-nog: $(OCAML_SITES_SRCS) $(OCAML5_PKG_FILES)
	$(call ocaml5_prog,,$(OCAML5_UNIX),$(OCAML_SITES_SRCS))

$(OCAML5_TEST_PROGS_DIR)/own_memprof: tests/ocaml/progs/own_memprof.ml $(OCAML_GATE) $(OCAML5_PKG_FILES)
	$(call ocaml5_prog,-g,$(OCAML5_UNIX),$(OCAML_GATE) $<)

$(OCAML5_TEST_PROGS_DIR)/threads_sites: tests/ocaml/progs/threads_sites.ml $(OCAML_GATE) $(OCAML5_PKG_FILES)
	$(call ocaml5_prog,-g,$(OCAML5_UNIX) -I +threads threads.cmxa,$(OCAML_GATE) $<)

$(OCAML5_TEST_PROGS_DIR)/fork_sites: tests/ocaml/progs/fork_sites.ml $(OCAML_GATE) $(OCAML5_PKG_FILES)
	$(call ocaml5_prog,-g,$(OCAML5_UNIX),$(OCAML_GATE) $<)

$(OCAML5_TEST_PROGS_DIR)/handover: tests/ocaml/progs/handover.ml $(OCAML_GATE) $(OCAML5_PKG_FILES)
	$(call ocaml5_prog,-g,$(OCAML5_UNIX),$(OCAML_GATE) $<)

$(OCAML5_TEST_PROGS_DIR)/lines: tests/ocaml/progs/lines.ml $(OCAML_GATE) $(OCAML5_PKG_FILES)
	$(call ocaml5_prog,-g,$(OCAML5_UNIX),$(OCAML_GATE) $<)

# Programs of OCaml 5 alone (domains): tests/ocaml5/progs/.
OCAML5_ONLY_PROGS := $(OCAML5_TEST_PROGS_DIR)/domains
$(OCAML5_TEST_PROGS_DIR)/domains: tests/ocaml5/progs/domains.ml $(OCAML_GATE) $(OCAML5_PKG_FILES)
	$(call ocaml5_prog,-g,$(OCAML5_UNIX),$(OCAML_GATE) $<)

# Bench (table 5): the sites program's work shared by domains.
OCAML5_BENCH_DOMAINS := $(BUILD)/bench/ocaml5-sites-domains
OCAML5_BENCH_DOMAINS_SRCS := $(OCAML_GATE) tests/ocaml/progs/work.ml bench/ocaml/sites_domains.ml
$(OCAML5_BENCH_DOMAINS): $(OCAML5_BENCH_DOMAINS_SRCS) $(OCAML5_PKG_FILES)
	$(call ocaml5_prog,-g,$(OCAML5_UNIX),$(OCAML5_BENCH_DOMAINS_SRCS))
BENCH_DEPS += $(OCAML5_BENCH_DOMAINS) $(OCAML5_TEST_PROGS_DIR)/sites

# tests/ocaml5/ compiles tests/ocaml's sources against these programs.
EXTRA_CFLAGS_tests/ocaml5/ := -Iuserspace -Ibpf -Itests/ocaml -Itests/attach \
	-DOCAML_PROGS_DIR='"$(OCAML5_TEST_PROGS_DIR)/"' -DOCAML_UNDER_TEST=5
TEST_NEEDS_ocaml5 = $(OCAML5_TEST_PROGS) $(OCAML5_ONLY_PROGS) $(LOADER)
TEST_LIBS_ocaml5 = $(LOADER_LIB_OBJS) $(BUILD)/obj/tests/attach/attach_util.o
TEST_LDLIBS_ocaml5 = $(LOADER_LIBS)

# tests/ocaml-versions/ (make test-long): OCaml 4.14.1 and 5.1.0, each built
# by the test itself (scripts/build-ocaml.sh, kept in build/ocaml-VERSION),
# with the package built for it by this Makefile.
EXTRA_CFLAGS_tests/ocaml-versions/ := -Iuserspace -Ibpf -Itests/ocaml -Itests/attach \
	-DOCAML_UNDER_TEST=4
TEST_NEEDS_ocaml-versions = $(OCAML_ATTACH4_SO) $(LOADER)
TEST_LIBS_ocaml-versions = $(LOADER_LIB_OBJS) $(BUILD)/obj/tests/attach/attach_util.o
TEST_LDLIBS_ocaml-versions = $(LOADER_LIBS)
