# userspace/: the loader, build/memprof-bpf (libbpf skeleton from bpf/), and
# `make demo`.  Tests: tests/attach/ (the loader against real processes:
# a deterministic probe trigger in tests/attach/progs/, the workloads).

LOADER := $(BUILD)/memprof-bpf
# Every userspace/*.c but main.c is also linked into the attach tests.
LOADER_LIB_SRCS := $(filter-out userspace/main.c,$(wildcard userspace/*.c))
LOADER_LIB_OBJS := $(LOADER_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
LOADER_OBJS := $(BUILD)/obj/userspace/main.o $(LOADER_LIB_OBJS)
LOADER_LIBS = $(call pkg_libs,libbpf) $(call pkg_libs,libelf) $(call pkg_libs,zlib)

EXTRA_CFLAGS_userspace/ := -I$(BUILD) -Ibpf

# The loader includes the generated skeleton.
$(LOADER_OBJS): $(BPF_SKEL) bpf/memprof_maps.h

$(LOADER): $(LOADER_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(LOADER_LIBS)

ALL_TARGETS += $(LOADER)

# ---- tests/attach/progs: a deterministic probe trigger, the same trigger in
# a shared library run by a small executable ----
ATTACH_PROGS := $(BUILD)/tests/attach/progs
ATTACH_TRIGGER := $(ATTACH_PROGS)/trigger
ATTACH_TRIGGER_LIB := $(ATTACH_PROGS)/libattach-trigger.so
ATTACH_TRIGGER_SO := $(ATTACH_PROGS)/trigger-so
# Real frames in the trigger: no inlining of sites, no tail calls.
EXTRA_CFLAGS_tests/attach/progs/ := -O1 -fno-omit-frame-pointer -fno-optimize-sibling-calls \
	-fno-inline

$(ATTACH_TRIGGER): $(BUILD)/obj/tests/attach/progs/trigger.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $^ -o $@ -lm

$(BUILD)/obj/tests/attach/progs/trigger_lib.o: tests/attach/progs/trigger.c

$(ATTACH_TRIGGER_LIB): $(BUILD)/obj/tests/attach/progs/trigger_lib.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -shared $^ -o $@ -lm

$(ATTACH_TRIGGER_SO): $(BUILD)/obj/tests/attach/progs/trigger_so_main.o $(ATTACH_TRIGGER_LIB)
	$(CC) $(CFLAGS) $< -o $@ -L$(ATTACH_PROGS) -lattach-trigger -Wl,-rpath,'$$ORIGIN'

# A multithreaded malloc workload (probes from the preload) for the attach
# storm, and a static program without probes.
ATTACH_THREADS := $(ATTACH_PROGS)/threads
ATTACH_STATIC := $(ATTACH_PROGS)/static-sleeper

$(ATTACH_THREADS): $(BUILD)/obj/tests/attach/progs/threads.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $^ -o $@ -lpthread

$(ATTACH_STATIC): $(BUILD)/obj/tests/attach/progs/static_sleeper.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -static $^ -o $@

ALL_TARGETS += $(ATTACH_TRIGGER) $(ATTACH_TRIGGER_SO) $(ATTACH_THREADS) $(ATTACH_STATIC)

# ---- Test settings (tests/build.mk) ----
EXTRA_CFLAGS_tests/attach/ := -O1 -fno-omit-frame-pointer -Iuserspace -Ibpf
TEST_LIBS_attach := $(LOADER_LIB_OBJS)
TEST_LDLIBS_attach = $(LOADER_LIBS)
TEST_NEEDS_attach = $(LOADER) $(ATTACH_TRIGGER) $(ATTACH_TRIGGER_SO) $(WORKLOAD_BINS) \
	$(ATTACH_THREADS) $(ATTACH_STATIC) $(PRELOAD_SO)

# ---- make demo ----
demo: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory build-all
	@./scripts/demo.sh

# ---- tests/fuzz: libFuzzer targets of the loader's parsers (clang, with
# ASan+UBSan), run for a bounded time by tests/fuzz/test_fuzz.c ----
FUZZ_PROGS := $(BUILD)/tests/fuzz/progs
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 $(WARN) -Iruntime-probes/include -Iuserspace \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_BINS := $(FUZZ_PROGS)/fuzz-elf $(FUZZ_PROGS)/fuzz-maps

$(FUZZ_PROGS)/fuzz-elf: tests/fuzz/progs/fuzz_elf.c userspace/elfimage.c userspace/elfimage.h \
		| $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) $(filter %.c,$^) -o $@ $(call pkg_libs,libelf)

$(FUZZ_PROGS)/fuzz-maps: tests/fuzz/progs/fuzz_maps.c userspace/procmaps.c userspace/procmaps.h \
		| $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) $(filter %.c,$^) -o $@

TEST_NEEDS_fuzz = $(FUZZ_BINS)
