# runtime-probes/preload: the malloc host, build/libmemprof-preload.so, an
# LD_PRELOAD-able interposer of the malloc family with the memprof core
# linked in (its USDT notes and memprof_probe_control end up in the .so).
# Its tests live in tests/preload/ (Criterion binaries that run real
# programs under LD_PRELOAD); docs/malloc-host.md describes it.
#
# The core's memprof_start/stop/discard are renamed (preload_core_*) in a
# private copy of libmemprof.a, so the .so exports its own wrappers (see
# runtime-probes/preload/lifecycle.c).

PRELOAD_SRCS := $(wildcard runtime-probes/preload/*.c)
PRELOAD_OBJS := $(PRELOAD_SRCS:%.c=$(BUILD)/obj/%.o)
PRELOAD_SO := $(BUILD)/libmemprof-preload.so
PRELOAD_CORE := $(BUILD)/preload/libmemprof-core.a
PRELOAD_CORE_RENAMED := memprof_start memprof_stop memprof_discard
PRELOAD_EXPORTS := runtime-probes/preload/exports.map
PRELOAD_LDLIBS := -lunwind -ldl -lpthread -lm

# Hidden by default (only PRELOAD_EXPORT functions are seen), and the
# per-thread countdown in static TLS (no __tls_get_addr on the fast path).
EXTRA_CFLAGS_runtime-probes/preload/ := -fvisibility=hidden -ftls-model=initial-exec
PRELOAD_SAMPLE_BENCH := $(BUILD)/bench/preload-sample-cost

# ---- Tests: helper programs run under the preload ----
PRELOAD_TEST_DIR := $(BUILD)/tests/preload
PRELOAD_PROG_C := $(wildcard tests/preload/progs/*.c)
PRELOAD_PROG_CXX := $(wildcard tests/preload/progs/*.cpp)
PRELOAD_PROG_HDRS := $(wildcard tests/preload/progs/*.h)
PRELOAD_PROGS := $(PRELOAD_PROG_C:tests/preload/progs/%.c=$(PRELOAD_TEST_DIR)/progs/%) \
	$(PRELOAD_PROG_CXX:tests/preload/progs/%.cpp=$(PRELOAD_TEST_DIR)/progs/%)
PRELOAD_PROGS += $(PRELOAD_TEST_DIR)/progs/libearly.so
PRELOAD_TEST_SRCS := $(wildcard tests/preload/test_*.c)
PRELOAD_TEST_BINS := $(PRELOAD_TEST_SRCS:tests/preload/%.c=$(PRELOAD_TEST_DIR)/%)
PRELOAD_TEST_HELPER_OBJS := $(BUILD)/obj/tests/preload/harness.o \
	$(BUILD)/obj/tests/preload/sites_compare.o
# Programs get frames (for the call-stack checks) and name their functions.
PRELOAD_PROG_FLAGS := -O1 -g -rdynamic -Iruntime-probes/include
# A program that calls the in-process API links the .so (it is also preloaded).
PRELOAD_PROG_LINK := -L$(BUILD) -lmemprof-preload -Wl,-rpath,'$$ORIGIN/../../..' -lpthread -ldl
EXTRA_CFLAGS_tests/preload/ := -DPRELOAD_BUILD_DIR='"$(BUILD)"'

# Unit test of the bootstrap arena links that object on its own.
$(PRELOAD_TEST_DIR)/test_bootstrap: $(BUILD)/obj/tests/preload/test_bootstrap.o \
		$(BUILD)/obj/runtime-probes/preload/bootstrap_arena.o
	@mkdir -p $(@D)
	$(CC) -o $@ $^ -lcriterion $(LDLIBS)

# The preload needs the core: build it (and the tests that run it) once the
# core's fragment exists.
ifneq ($(wildcard runtime-probes/core.mk),)

ALL_TARGETS += $(PRELOAD_SO) $(PRELOAD_PROGS) $(PRELOAD_SAMPLE_BENCH)
TEST_BINS += $(PRELOAD_TEST_BINS)
BENCH_DEPS += $(PRELOAD_SO) $(PRELOAD_SAMPLE_BENCH)

# Cost of one sample, with and without the DWARF call stack (`make bench`;
# run it under the preload, see runtime-probes/preload/bench/sample_cost.c).
$(PRELOAD_SAMPLE_BENCH): runtime-probes/preload/bench/sample_cost.c $(PRELOAD_SO) $(PUBLIC_HDRS)
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -O2 -fomit-frame-pointer -Iruntime-probes/include \
		-o $@ $< -L$(BUILD) -lmemprof-preload -Wl,-rpath,'$$ORIGIN/..'

$(PRELOAD_CORE): $(BUILD)/libmemprof.a
	@mkdir -p $(@D)
	objcopy $(foreach s,$(PRELOAD_CORE_RENAMED),--redefine-sym $(s)=preload_core_$(s)) $< $@

$(PRELOAD_SO): $(PRELOAD_OBJS) $(PRELOAD_CORE) $(PRELOAD_EXPORTS)
	@mkdir -p $(@D)
	$(CC) -shared -o $@ -Wl,-soname,libmemprof-preload.so \
		-Wl,--version-script=$(PRELOAD_EXPORTS) $(PRELOAD_OBJS) \
		-Wl,--whole-archive $(PRELOAD_CORE) -Wl,--no-whole-archive \
		$(MEMPROF_LIBS) $(PRELOAD_LDLIBS)

$(PRELOAD_TEST_DIR)/progs/%: tests/preload/progs/%.c $(PRELOAD_SO) $(PUBLIC_HDRS) $(PRELOAD_PROG_HDRS)
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(PRELOAD_PROG_FLAGS) -o $@ $< $(PRELOAD_PROG_LINK)

$(PRELOAD_TEST_DIR)/progs/%: tests/preload/progs/%.cpp $(PRELOAD_SO) $(PUBLIC_HDRS) $(PRELOAD_PROG_HDRS)
	@mkdir -p $(@D)
	g++ -std=c++17 $(WARN) $(PRELOAD_PROG_FLAGS) -o $@ $< $(PRELOAD_PROG_LINK)

# The attach test runs the loader when the userspace fragment builds it.
ifneq ($(wildcard userspace/build.mk),)
$(PRELOAD_TEST_DIR)/test_attach: $(BUILD)/memprof-bpf
endif

# Preloaded after the preload by the allocations-before-init test.
$(PRELOAD_TEST_DIR)/progs/libearly.so: tests/preload/libs/early_lib.c
	@mkdir -p $(@D)
	$(CC) -std=c11 $(WARN) -O1 -g -fPIC -shared -o $@ $<

$(PRELOAD_TEST_DIR)/test_%: $(BUILD)/obj/tests/preload/test_%.o $(PRELOAD_TEST_HELPER_OBJS) \
		$(PRELOAD_SO) $(PRELOAD_PROGS)
	@mkdir -p $(@D)
	$(CC) -o $@ $< $(PRELOAD_TEST_HELPER_OBJS) -lcriterion $(LDLIBS)

endif
