# runtime-probes/hosts/ocaml-attach: the injectable OCaml host, the library
# `memprof-bpf attach` loads into a running native OCaml program that was
# never linked with memprof_probe (docs/ocaml-host.md, "Attaching to a
# program never linked with memprof_probe").  C only, one library per
# runtime family, each compiled against that compiler's headers:
#   build/libmemprof-ocaml4-attach.so  Debian's OCaml 4.13 (4.13, 4.14)
#   build/libmemprof-ocaml5-attach.so  OCaml 5.3 (build/ocaml5)
# The runtime's symbols stay undefined: the dynamic loader resolves them
# from the executable's .dynsym when the library is injected.  The linked
# host's memprof_probe_callstack.c and memprof_probe_gc.c are compiled in,
# unchanged: the same stack entries, so the loader decodes them alike, and
# the same memprof:gc.
# Tests: tests/ocaml/test_unmodified.c, tests/ocaml5/test_unmodified.c.

OCAML_ATTACH_DIR := runtime-probes/hosts/ocaml-attach
OCAML_ATTACH4_SO := $(BUILD)/libmemprof-ocaml4-attach.so
OCAML_ATTACH5_SO := $(BUILD)/libmemprof-ocaml5-attach.so
OCAML_ATTACH_HDRS := $(OCAML_ATTACH_DIR)/ocaml_attach.h $(OCAML_DIR)/memprof_probe_callstack.h \
	$(OCAML_DIR)/memprof_probe_gc.h $(PUBLIC_HDRS)
OCAML_ATTACH_CFLAGS := $(CFLAGS) -fvisibility=hidden -I$(OCAML_ATTACH_DIR) -I$(OCAML_DIR)
OCAML_ATTACH4_OBJS := $(addprefix $(BUILD)/ocaml-attach4/,ocaml_attach.o safepoint4.o \
	memprof_probe_callstack.o memprof_probe_gc.o)
OCAML_ATTACH5_OBJS := $(addprefix $(BUILD)/ocaml-attach5/,ocaml_attach.o safepoint5.o \
	memprof_probe_callstack.o memprof_probe_gc.o)
# The loader finds them next to itself (or in ../lib), as the malloc host.
# The 5.3 one needs OCaml 5.3 built (make ocaml5, or the 5.3 tests), as the
# 5.3 package does.
ALL_TARGETS += $(OCAML_ATTACH4_SO)
ocaml5: $(OCAML_ATTACH5_SO)

$(BUILD)/ocaml-attach4/%.o: $(OCAML_ATTACH_DIR)/%.c $(OCAML_ATTACH_HDRS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(OCAML_ATTACH_CFLAGS) -isystem $(call ocaml_where) -c $< -o $@
$(BUILD)/ocaml-attach4/memprof_probe_%.o: $(OCAML_DIR)/memprof_probe_%.c \
		$(OCAML_ATTACH_HDRS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(OCAML_ATTACH_CFLAGS) -isystem $(call ocaml_where) \
		-DMEMPROF_OCAML_STDLIB_DIR='"$(call ocaml_where)"' -c $< -o $@

$(BUILD)/ocaml-attach5/%.o: $(OCAML_ATTACH_DIR)/%.c $(OCAML_ATTACH_HDRS) | $(OCAML5_OPT)
	@mkdir -p $(@D)
	$(CC) $(OCAML_ATTACH_CFLAGS) -isystem $(OCAML5_PREFIX)/lib/ocaml -c $< -o $@
$(BUILD)/ocaml-attach5/memprof_probe_%.o: $(OCAML_DIR)/memprof_probe_%.c \
		$(OCAML_ATTACH_HDRS) | $(OCAML5_OPT)
	@mkdir -p $(@D)
	$(CC) $(OCAML_ATTACH_CFLAGS) -isystem $(OCAML5_PREFIX)/lib/ocaml \
		-DMEMPROF_OCAML_STDLIB_DIR='"$(abspath $(OCAML5_PREFIX)/lib/ocaml)"' -c $< -o $@

# The control block and the stdlib string are the only exports.
$(OCAML_ATTACH4_SO): $(OCAML_ATTACH4_OBJS)
	$(CC) -shared -o $@ -Wl,-soname,$(notdir $@) $^ -lpthread -lm
$(OCAML_ATTACH5_SO): $(OCAML_ATTACH5_OBJS)
	$(CC) -shared -o $@ -Wl,-soname,$(notdir $@) $^ -lpthread -lm

# ---- Test programs never linked with memprof_probe ----
# $(call ocaml4_plain,SOURCES,FLAGS) and $(call ocaml5_plain,SOURCES,FLAGS):
# the recipe of such a program, built from SOURCES in a folder of its own
# with 4.13's ocamlfind ocamlopt or 5.3's ocamlopt.
ocaml4_plain = rm -rf $@.src && mkdir -p $@.src && cp $(1) $@.src/ && \
	cd $@.src && $(OCAMLFIND) ocamlopt -g $(2) $(notdir $(1)) -o $(notdir $@).tmp && \
	mv -f $(notdir $@).tmp ../$(notdir $@)
ocaml5_plain = rm -rf $@.src && mkdir -p $@.src && cp $(1) $@.src/ && \
	cd $@.src && $(abspath $(OCAML5_OPT)) -g $(2) $(notdir $(1)) -o $(notdir $@).tmp && \
	mv -f $(notdir $@).tmp ../$(notdir $@)
# 4.13: the bench's sites program without the package (OCAML_BENCH_PLAIN);
# 5.3: the same sources, built with 5.3.
OCAML5_PLAIN := $(OCAML5_TEST_PROGS_DIR)/sites-plain
$(OCAML5_PLAIN): $(OCAML_PLAIN_SRCS) | $(OCAML5_OPT)
	$(call ocaml5_plain,$(OCAML_PLAIN_SRCS),$(OCAML5_UNIX))
TEST_NEEDS_ocaml += $(OCAML_ATTACH4_SO)
TEST_NEEDS_ocaml5 += $(OCAML_ATTACH5_SO) $(OCAML5_PLAIN)
# 5.3 domains (tests/ocaml5/progs/spawner.ml), without the package too.
OCAML5_SPAWNER := $(OCAML5_TEST_PROGS_DIR)/spawner
OCAML5_SPAWNER_SRCS := bench/ocaml/no_probe/memprof_probe.ml $(OCAML_GATE) tests/ocaml5/progs/spawner.ml
$(OCAML5_SPAWNER): $(OCAML5_SPAWNER_SRCS) | $(OCAML5_OPT)
	$(call ocaml5_plain,$(OCAML5_SPAWNER_SRCS),$(OCAML5_UNIX))
TEST_NEEDS_ocaml5 += $(OCAML5_SPAWNER)
# A program running its own Gc.Memprof (tests/ocaml/progs/own_memprof.ml), both compilers.
OCAML_OWN_PLAIN_SRCS := bench/ocaml/no_probe/memprof_probe.ml $(OCAML_GATE) \
	tests/ocaml/progs/own_memprof.ml
OCAML_OWN_PLAIN := $(OCAML_TEST_PROGS_DIR)/own_memprof-plain
OCAML5_OWN_PLAIN := $(OCAML5_TEST_PROGS_DIR)/own_memprof-plain
$(OCAML_OWN_PLAIN): $(OCAML_OWN_PLAIN_SRCS) | $(DEPS_STAMP)
	$(call ocaml4_plain,$(OCAML_OWN_PLAIN_SRCS),-package unix -linkpkg)
$(OCAML5_OWN_PLAIN): $(OCAML_OWN_PLAIN_SRCS) | $(OCAML5_OPT)
	$(call ocaml5_plain,$(OCAML_OWN_PLAIN_SRCS),$(OCAML5_UNIX))
ALL_TARGETS += $(OCAML_OWN_PLAIN)
TEST_NEEDS_ocaml += $(OCAML_OWN_PLAIN)
TEST_NEEDS_ocaml5 += $(OCAML5_OWN_PLAIN)
# The ground truth of those attaches: the sites program with a stand-in that
# counts its allocations with its own Gc.Memprof at rate 1
# (tests/ocaml/progs/truth/memprof_probe.ml), a run of its own.
OCAML_TRUTH_SRCS := tests/ocaml/progs/truth/memprof_probe.ml $(OCAML_SITES_SRCS)
OCAML_TRUTH := $(OCAML_TEST_PROGS_DIR)/sites-truth
OCAML5_TRUTH := $(OCAML5_TEST_PROGS_DIR)/sites-truth
$(OCAML_TRUTH): $(OCAML_TRUTH_SRCS) | $(DEPS_STAMP)
	$(call ocaml4_plain,$(OCAML_TRUTH_SRCS),-package unix -linkpkg)
$(OCAML5_TRUTH): $(OCAML_TRUTH_SRCS) | $(OCAML5_OPT)
	$(call ocaml5_plain,$(OCAML_TRUTH_SRCS),$(OCAML5_UNIX))
ALL_TARGETS += $(OCAML_TRUTH)
TEST_NEEDS_ocaml += $(OCAML_TRUTH)
TEST_NEEDS_ocaml5 += $(OCAML5_TRUTH)
# Systhreads (tests/ocaml/progs/threads_sites.ml), both compilers.
OCAML_THREADS_PLAIN_SRCS := bench/ocaml/no_probe/memprof_probe.ml $(OCAML_GATE) \
	tests/ocaml/progs/threads_sites.ml
OCAML_THREADS_PLAIN := $(OCAML_TEST_PROGS_DIR)/threads_sites-plain
OCAML5_THREADS_PLAIN := $(OCAML5_TEST_PROGS_DIR)/threads_sites-plain
$(OCAML_THREADS_PLAIN): $(OCAML_THREADS_PLAIN_SRCS) | $(DEPS_STAMP)
	$(call ocaml4_plain,$(OCAML_THREADS_PLAIN_SRCS),-thread -package unix$(OCAML_COMMA)threads.posix -linkpkg)
$(OCAML5_THREADS_PLAIN): $(OCAML_THREADS_PLAIN_SRCS) | $(OCAML5_OPT)
	$(call ocaml5_plain,$(OCAML_THREADS_PLAIN_SRCS),$(OCAML5_UNIX) -I +threads threads.cmxa)
ALL_TARGETS += $(OCAML_THREADS_PLAIN)
TEST_NEEDS_ocaml += $(OCAML_THREADS_PLAIN)
TEST_NEEDS_ocaml5 += $(OCAML5_THREADS_PLAIN)
BENCH_DEPS += $(OCAML5_PLAIN) $(OCAML_ATTACH4_SO) $(OCAML_ATTACH5_SO)
# A program blocked in a system call (tests/ocaml/progs/blocked.ml), both compilers.
OCAML_BLOCKED_SRCS := bench/ocaml/no_probe/memprof_probe.ml $(OCAML_GATE) tests/ocaml/progs/blocked.ml
OCAML_BLOCKED := $(OCAML_TEST_PROGS_DIR)/blocked-plain
OCAML5_BLOCKED := $(OCAML5_TEST_PROGS_DIR)/blocked-plain
$(OCAML_BLOCKED): $(OCAML_BLOCKED_SRCS) | $(DEPS_STAMP)
	$(call ocaml4_plain,$(OCAML_BLOCKED_SRCS),-package unix -linkpkg)
$(OCAML5_BLOCKED): $(OCAML_BLOCKED_SRCS) | $(OCAML5_OPT)
	$(call ocaml5_plain,$(OCAML_BLOCKED_SRCS),$(OCAML5_UNIX))
ALL_TARGETS += $(OCAML_BLOCKED)
TEST_NEEDS_ocaml += $(OCAML_BLOCKED)
TEST_NEEDS_ocaml5 += $(OCAML5_BLOCKED)
# 5.3: a domain exiting while its profile samples (tests/ocaml5/progs/orphan.ml).
OCAML5_ORPHAN_SRCS := bench/ocaml/no_probe/memprof_probe.ml $(OCAML_GATE) tests/ocaml5/progs/orphan.ml
OCAML5_ORPHAN := $(OCAML5_TEST_PROGS_DIR)/orphan
$(OCAML5_ORPHAN): $(OCAML5_ORPHAN_SRCS) | $(OCAML5_OPT)
	$(call ocaml5_plain,$(OCAML5_ORPHAN_SRCS),$(OCAML5_UNIX))
TEST_NEEDS_ocaml5 += $(OCAML5_ORPHAN)
# 5.3: a domain blocked through the whole detach (tests/ocaml5/progs/blocked_domain.ml).
OCAML5_BLOCKED_DOMAIN_SRCS := bench/ocaml/no_probe/memprof_probe.ml $(OCAML_GATE) \
	tests/ocaml5/progs/blocked_domain.ml
OCAML5_BLOCKED_DOMAIN := $(OCAML5_TEST_PROGS_DIR)/blocked_domain
$(OCAML5_BLOCKED_DOMAIN): $(OCAML5_BLOCKED_DOMAIN_SRCS) | $(OCAML5_OPT)
	$(call ocaml5_plain,$(OCAML5_BLOCKED_DOMAIN_SRCS),$(OCAML5_UNIX))
TEST_NEEDS_ocaml5 += $(OCAML5_BLOCKED_DOMAIN)
