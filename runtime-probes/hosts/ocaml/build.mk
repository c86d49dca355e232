# runtime-probes/hosts/ocaml: the OCaml host, a findlib package that makes
# any native OCaml 4.13 or 5.3 program attachable by memprof-bpf.  It is built into
# build/ocaml/memprof_probe/, so that a program builds with
#   OCAMLPATH=$PWD/build/ocaml ocamlfind ocamlopt -g -package memprof_probe,unix -linkpkg app.ml -o app
# and calls Memprof_probe.install () once.  The C stubs fire the probes of
# memprof_probe_abi.h; the link wraps three runtime functions (OCAML_WRAP,
# recorded in the .cmxa: memprof_probe_stubs.c says why) and exports the
# control block.
# Tests: tests/ocaml/ (real OCaml programs of tests/ocaml/progs/, attached
# with the loader).
# OCaml 5.3: the second half of this file builds the compiler from the npm
# registry (scripts/build-ocaml5.sh, once per clean tree, about 5 minutes),
# the same package for it under build/ocaml5/lib/, and the same test
# programs; tests/ocaml5/ runs tests/ocaml's scenarios on them.

OCAML_DIR := runtime-probes/hosts/ocaml
OCAML_PKG := $(BUILD)/ocaml/memprof_probe
OCAML_STUBS_OBJ := $(BUILD)/obj/$(OCAML_DIR)/memprof_probe_stubs.o
OCAMLFIND := ocamlfind
OCAML_COMMA := ,
# Asked once, when first used (ocaml-nox is installed by the deps step).
ocaml_where = $(or $(OCAML_WHERE),$(eval OCAML_WHERE := $(shell $(OCAMLFIND) ocamlc -where))$(OCAML_WHERE))
OCAML_WRAP_COMMON := -Wl,--wrap=caml_memprof_start,--wrap=caml_memprof_stop \
	-Wl,--export-dynamic-symbol=memprof_probe_control
OCAML_WRAP := $(OCAML_WRAP_COMMON) -Wl,--wrap=caml_final_do_calls_exn
OCAML_PKG_FILES := $(addprefix $(OCAML_PKG)/,META memprof_probe.cmxa memprof_probe.a \
	memprof_probe.cmi memprof_probe.cmx memprof_probe.mli libmemprof_probe_stubs.a)

EXTRA_CFLAGS_$(OCAML_DIR)/ = -I$(call ocaml_where)

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

$(OCAML_PKG)/memprof_probe.cmx: $(OCAML_DIR)/memprof_probe.ml $(OCAML_PKG)/memprof_probe.cmi
	$(OCAMLFIND) ocamlopt -g -I $(@D) -c -o $@ $<

# The .cmxa records the C library and the link options.
$(OCAML_PKG)/memprof_probe.a: $(OCAML_PKG)/memprof_probe.cmxa
$(OCAML_PKG)/memprof_probe.cmxa: $(OCAML_PKG)/memprof_probe.cmx $(OCAML_PKG)/libmemprof_probe_stubs.a \
		$(OCAML_DIR)/build.mk
	$(OCAMLFIND) ocamlopt -a -o $@ $< -cclib -lmemprof_probe_stubs -ccopt "$(OCAML_WRAP)"

# ---- Test programs: tests/ocaml/progs/, built with the README's command ----
OCAML_TEST_PROGS_DIR := $(BUILD)/tests/ocaml/progs
OCAML_TEST_PROGS := $(addprefix $(OCAML_TEST_PROGS_DIR)/,sites sites-nog own_memprof threads_sites \
	fork_sites handover)
# $(call ocaml_prog,FLAGS,PACKAGES,SOURCES): sources are copied to a folder of
# the program's own, so no compiler output lands in the source tree.
ocaml_prog = rm -rf $@.src && mkdir -p $@.src && cp $(3) $@.src/ && \
	cd $@.src && OCAMLPATH=$(abspath $(BUILD)/ocaml) $(OCAMLFIND) ocamlopt $(1) \
	-package memprof_probe,$(2) -linkpkg $(notdir $(3)) -o $(notdir $@).tmp && \
	mv -f $(notdir $@).tmp ../$(notdir $@)

# Every program starts with the test's handshake (gate.ml).
OCAML_GATE := tests/ocaml/progs/gate.ml
OCAML_SITES_SRCS := $(OCAML_GATE) tests/ocaml/progs/work.ml tests/ocaml/progs/sites.ml

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

ALL_TARGETS += $(OCAML_TEST_PROGS)

# ---- Test settings (tests/build.mk) ----
EXTRA_CFLAGS_tests/ocaml/ := -Iuserspace -Ibpf -Itests/attach -DOCAML_UNDER_TEST=4
TEST_NEEDS_ocaml = $(OCAML_TEST_PROGS) $(LOADER)
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
BENCH_DEPS += $(OCAML_BENCH_PLAIN) $(OCAML_TEST_PROGS)

# ---- OCaml 5.3: the compiler, the package, the test programs ----
OCAML5_PREFIX := $(BUILD)/ocaml5/ocaml
OCAML5_OPT := $(OCAML5_PREFIX)/bin/ocamlopt
OCAML5_LIB := $(BUILD)/ocaml5/lib
OCAML5_PKG := $(OCAML5_LIB)/memprof_probe
OCAML5_SRC := $(BUILD)/ocaml5/src
OCAML5_STUBS_OBJ := $(BUILD)/ocaml5/obj/memprof_probe_stubs.o
OCAML5_WRAP := $(OCAML_WRAP_COMMON) -Wl,--wrap=caml_final_do_calls_res
OCAML5_PKG_FILES := $(addprefix $(OCAML5_PKG)/,META memprof_probe.cmxa memprof_probe.a \
	memprof_probe.cmi memprof_probe.cmx memprof_probe.mli libmemprof_probe_stubs.a)

.PHONY: ocaml5
ocaml5: $(OCAML5_PKG_FILES)

# Built once per clean tree (the script leaves an installed 5.3.0 alone).
$(OCAML5_OPT): | $(DEPS_STAMP)
	./scripts/build-ocaml5.sh $(OCAML5_PREFIX)

$(OCAML5_STUBS_OBJ): $(OCAML_DIR)/memprof_probe_stubs.c $(PUBLIC_HDRS) | $(OCAML5_OPT)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -isystem $(OCAML5_PREFIX)/lib/ocaml -c $< -o $@

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
	$(OCAML5_OPT) -a -o $@ $< -cclib -lmemprof_probe_stubs -ccopt "$(OCAML5_WRAP)"

# The test programs, built with the README's 5.3 command.
OCAML5_TEST_PROGS_DIR := $(BUILD)/tests/ocaml5/progs
OCAML5_TEST_PROGS := $(addprefix $(OCAML5_TEST_PROGS_DIR)/,$(notdir $(OCAML_TEST_PROGS)))
# $(call ocaml5_prog,FLAGS,LIBRARIES,SOURCES), as ocaml_prog.
ocaml5_prog = rm -rf $@.src && mkdir -p $@.src && cp $(3) $@.src/ && \
	cd $@.src && $(abspath $(OCAML5_OPT)) $(1) -I $(abspath $(OCAML5_PKG)) $(2) \
	memprof_probe.cmxa $(notdir $(3)) -o $(notdir $@).tmp && \
	mv -f $(notdir $@).tmp ../$(notdir $@)
OCAML5_UNIX := -I +unix unix.cmxa

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

# tests/ocaml5/ compiles tests/ocaml's sources against these programs.
EXTRA_CFLAGS_tests/ocaml5/ := -Iuserspace -Ibpf -Itests/ocaml -Itests/attach \
	-DOCAML_PROGS_DIR='"$(OCAML5_TEST_PROGS_DIR)/"' -DOCAML_UNDER_TEST=5
TEST_NEEDS_ocaml5 = $(OCAML5_TEST_PROGS) $(LOADER)
TEST_LIBS_ocaml5 = $(LOADER_LIB_OBJS) $(BUILD)/obj/tests/attach/attach_util.o
TEST_LDLIBS_ocaml5 = $(LOADER_LIBS)
