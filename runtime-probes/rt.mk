# rt: the reference generational runtime (runtime-probes/rt/), its tests
# (tests/rt/) and the bundled workloads (runtime-probes/workloads/).
#
# Outputs: build/librt.a, build/san/librt.a (ASan+UBSan), build/nohook/librt.a
# (compiled with -DRT_NO_MEMPROF: no memprof hook at all), the workload
# binaries build/workload-sites, build/workload-seed, build/workload-seed-nohook,
# and the Criterion binaries build/tests/rt/test-rt, build/san/tests/rt/test-rt
# and build/nohook/tests/rt/test-rt (GC tests only).

RT_SRCS := $(wildcard runtime-probes/rt/*.c)
RT_OBJS := $(RT_SRCS:%.c=$(BUILD)/obj/%.o)
RT_SAN_OBJS := $(RT_SRCS:%.c=$(BUILD)/san/obj/%.o)
RT_NOHOOK_OBJS := $(RT_SRCS:%.c=$(BUILD)/nohook/obj/%.o)

# Link flags of every program that links a librt: rt's capture_callstack
# hook unwinds with libunwind (runtime-probes/rt/callstack.c).
RT_LIBS := -lunwind

RT_LIB := $(BUILD)/librt.a
RT_SAN_LIB := $(BUILD)/san/librt.a
RT_NOHOOK_LIB := $(BUILD)/nohook/librt.a

# The memprof core the hooked builds link against (the core's outputs).
RT_MEMPROF_A := $(BUILD)/libmemprof.a
RT_MEMPROF_SAN_A := $(BUILD)/san/libmemprof.a

ALL_TARGETS += $(RT_LIB) $(RT_SAN_LIB) $(RT_NOHOOK_LIB) $(BUILD)/workload-seed-nohook

$(RT_LIB): $(RT_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^

$(RT_SAN_LIB): $(RT_SAN_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^

$(RT_NOHOOK_LIB): $(RT_NOHOOK_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^

# The no-hook variant: same sources, one macro (see rt/rt_memprof.h).
RT_NOHOOK_CFLAGS := $(CFLAGS) -DRT_NO_MEMPROF
$(BUILD)/nohook/obj/%.o: %.c $(PUBLIC_HDRS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(RT_NOHOOK_CFLAGS) -c $< -o $@

# ---- Workloads ----
WORKLOAD_SEED_NOHOOK_OBJS := $(BUILD)/nohook/obj/runtime-probes/workloads/seed.o \
	$(BUILD)/nohook/obj/runtime-probes/workloads/options.o
$(BUILD)/workload-seed-nohook: $(WORKLOAD_SEED_NOHOOK_OBJS) $(RT_NOHOOK_LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(RT_LIBS) $(LDLIBS)

# The GC tests again on the no-hook variant: it must work (and link) with
# no memprof at all.
RT_GC_TEST_SRCS := tests/rt/test_gc.c tests/rt/test_custom_marshal.c tests/rt/test_threads.c
RT_TEST_NOHOOK_BIN := $(BUILD)/nohook/tests/rt/test-rt
TEST_BINS += $(RT_TEST_NOHOOK_BIN)
$(RT_TEST_NOHOOK_BIN): $(RT_GC_TEST_SRCS:%.c=$(BUILD)/obj/%.o) $(RT_NOHOOK_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ -lcriterion $(RT_LIBS) $(LDLIBS)

# ---- Binaries that link the memprof core (runtime-probes/core.mk) ----
ALL_TARGETS += $(BUILD)/workload-sites $(BUILD)/workload-seed

WORKLOAD_SITES_OBJS := $(BUILD)/obj/runtime-probes/workloads/sites.o \
	$(BUILD)/obj/runtime-probes/workloads/options.o
$(BUILD)/workload-sites: $(WORKLOAD_SITES_OBJS) $(RT_LIB) $(RT_MEMPROF_A)
	$(CC) $(CFLAGS) -o $@ $^ $(MEMPROF_LIBS) $(RT_LIBS) $(LDLIBS)

WORKLOAD_SEED_OBJS := $(BUILD)/obj/runtime-probes/workloads/seed.o \
	$(BUILD)/obj/runtime-probes/workloads/options.o
$(BUILD)/workload-seed: $(WORKLOAD_SEED_OBJS) $(RT_LIB) $(RT_MEMPROF_A)
	$(CC) $(CFLAGS) -o $@ $^ $(MEMPROF_LIBS) $(RT_LIBS) $(LDLIBS)

# ---- Tests: GC correctness (sampling off), rt as a memprof host (sampling
# on), the workloads as programs; plain and sanitized ----
RT_TEST_SRCS := $(wildcard tests/rt/*.c)
# tests/rt/test_callstack.c checks rt's entry marks (rt_internal.h).  The
# test binaries export their symbols (-rdynamic) so dladdr1 gives the
# address ranges of the mutator functions.
EXTRA_CFLAGS_tests/rt/ := -Iruntime-probes/rt
RT_TEST_BIN := $(BUILD)/tests/rt/test-rt
RT_TEST_SAN_BIN := $(BUILD)/san/tests/rt/test-rt
TEST_BINS += $(RT_TEST_BIN) $(RT_TEST_SAN_BIN)
# tests/rt/test_workloads.c runs the workload binaries.
RT_WORKLOADS := $(BUILD)/workload-sites $(BUILD)/workload-seed $(BUILD)/workload-seed-nohook
$(RT_TEST_BIN) $(RT_TEST_SAN_BIN): | $(RT_WORKLOADS)

$(RT_TEST_BIN): $(RT_TEST_SRCS:%.c=$(BUILD)/obj/%.o) $(RT_LIB) $(RT_MEMPROF_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -rdynamic -o $@ $^ $(MEMPROF_LIBS) -lcriterion $(RT_LIBS) $(LDLIBS)

$(RT_TEST_SAN_BIN): $(RT_TEST_SRCS:%.c=$(BUILD)/san/obj/%.o) $(RT_SAN_LIB) $(RT_MEMPROF_SAN_A)
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -rdynamic -o $@ $^ $(MEMPROF_LIBS) -lcriterion $(RT_LIBS) $(LDLIBS)
