# The malloc host (runtime-probes/hosts/preload/): build/libmemprof-preload.so,
# an LD_PRELOAD-able interposer of the malloc family with the memprof core
# linked in (its USDT notes and memprof_probe_control end up in the .so).
# Tests: tests/preload/ (real programs, tests/preload/progs/, run under
# LD_PRELOAD); docs/malloc-host.md describes it.
#
# The core's memprof_start/stop/discard (and start_profile/discard_profile)
# are renamed (preload_core_*) in a
# private copy of libmemprof.a, so the .so exports its own wrappers (see
# lifecycle.c).

PRELOAD_DIR := runtime-probes/hosts/preload
PRELOAD_SRCS := $(wildcard $(PRELOAD_DIR)/*.c)
PRELOAD_OBJS := $(PRELOAD_SRCS:%.c=$(BUILD)/obj/%.o)
PRELOAD_SO := $(BUILD)/libmemprof-preload.so
PRELOAD_CORE := $(BUILD)/preload/libmemprof-core.a
PRELOAD_CORE_RENAMED := memprof_start memprof_stop memprof_discard \
	memprof_start_profile memprof_discard_profile
PRELOAD_EXPORTS := $(PRELOAD_DIR)/exports.map
PRELOAD_LDLIBS = -ldl -lpthread -lm

# Hidden by default (only PRELOAD_EXPORT functions are seen), and the
# per-thread countdown in static TLS (no __tls_get_addr on the fast path).
# The core's folder for idmap.h, the map sampled_blocks.c shares with it.
EXTRA_CFLAGS_$(PRELOAD_DIR)/ := -fvisibility=hidden -ftls-model=initial-exec -Iruntime-probes/core
PRELOAD_SAMPLE_BENCH := $(BUILD)/bench/preload-sample-cost

ALL_TARGETS += $(PRELOAD_SO) $(PRELOAD_SAMPLE_BENCH)
BENCH_DEPS += $(PRELOAD_SO) $(PRELOAD_SAMPLE_BENCH)

$(PRELOAD_CORE): $(BUILD)/libmemprof.a
	@mkdir -p $(@D)
	objcopy $(foreach s,$(PRELOAD_CORE_RENAMED),--redefine-sym $(s)=preload_core_$(s)) $< $@

$(PRELOAD_SO): $(PRELOAD_OBJS) $(PRELOAD_CORE) $(PRELOAD_EXPORTS)
	@mkdir -p $(@D)
	$(CC) -shared -o $@ -Wl,-soname,libmemprof-preload.so \
		-Wl,--version-script=$(PRELOAD_EXPORTS) $(PRELOAD_OBJS) \
		-Wl,--whole-archive $(PRELOAD_CORE) -Wl,--no-whole-archive \
		$(MEMPROF_LIBS) $(PRELOAD_LDLIBS)

# Cost of one sample, with and without the DWARF call stack (`make bench`;
# run it under the preload, see bench/sample_cost.c here).
$(PRELOAD_SAMPLE_BENCH): $(PRELOAD_DIR)/bench/sample_cost.c $(PRELOAD_SO) $(PUBLIC_HDRS)
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -O2 -fomit-frame-pointer -Iruntime-probes/include \
		-o $@ $< -L$(BUILD) -lmemprof-preload -Wl,-rpath,'$$ORIGIN/..'

# ---- Test programs: tests/preload/progs/*.{c,cpp}, and a library preloaded
# after the preload by the allocations-before-init test ----
PRELOAD_TEST_DIR := $(BUILD)/tests/preload
PRELOAD_PROG_C := $(wildcard tests/preload/progs/*.c)
PRELOAD_PROG_CXX := $(wildcard tests/preload/progs/*.cpp)
PRELOAD_PROG_HDRS := $(wildcard tests/preload/progs/*.h)
PRELOAD_PROGS_C := $(PRELOAD_PROG_C:tests/preload/progs/%.c=$(PRELOAD_TEST_DIR)/progs/%)
PRELOAD_PROGS_CXX := $(PRELOAD_PROG_CXX:tests/preload/progs/%.cpp=$(PRELOAD_TEST_DIR)/progs/%)
PRELOAD_PROGS := $(PRELOAD_PROGS_C) $(PRELOAD_PROGS_CXX) $(PRELOAD_TEST_DIR)/progs/libearly.so
# Programs get frames (for the call-stack checks) and name their functions.
PRELOAD_PROG_FLAGS := -O1 -g -rdynamic -Iruntime-probes/include
# A program that calls the in-process API links the .so (it is also preloaded).
PRELOAD_PROG_LINK := -L$(BUILD) -lmemprof-preload -Wl,-rpath,'$$ORIGIN/../../..' -lpthread -ldl

$(PRELOAD_PROGS_C): $(PRELOAD_TEST_DIR)/progs/%: tests/preload/progs/%.c $(PRELOAD_SO) \
		$(PUBLIC_HDRS) $(PRELOAD_PROG_HDRS)
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(PRELOAD_PROG_FLAGS) -o $@ $< $(PRELOAD_PROG_LINK)

$(PRELOAD_PROGS_CXX): $(PRELOAD_TEST_DIR)/progs/%: tests/preload/progs/%.cpp $(PRELOAD_SO) \
		$(PUBLIC_HDRS) $(PRELOAD_PROG_HDRS)
	@mkdir -p $(@D)
	g++ -std=c++17 $(WARN) $(PRELOAD_PROG_FLAGS) -o $@ $< $(PRELOAD_PROG_LINK)

$(PRELOAD_TEST_DIR)/progs/libearly.so: tests/preload/libs/early_lib.c
	@mkdir -p $(@D)
	$(CC) -std=c11 $(WARN) -O1 -g -fPIC -shared -o $@ $<

# ---- Test settings (tests/build.mk) ----
# test_bootstrap unit-tests the bootstrap arena object (with the sampled-block
# filter it holds its blocks in); the others
# run the programs above (and the loader) under the preload.
EXTRA_CFLAGS_tests/preload/ := -DPRELOAD_BUILD_DIR='"$(BUILD)"' -I$(PRELOAD_DIR) -Ibpf
TEST_LIBS_preload := $(BUILD)/obj/$(PRELOAD_DIR)/bootstrap_arena.o \
	$(BUILD)/obj/$(PRELOAD_DIR)/sampled_blocks.o
TEST_NEEDS_preload = $(PRELOAD_SO) $(PRELOAD_PROGS) $(LOADER)
