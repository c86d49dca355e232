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

ALL_TARGETS += $(ATTACH_TRIGGER) $(ATTACH_TRIGGER_SO)

# ---- Test settings (tests/build.mk) ----
EXTRA_CFLAGS_tests/attach/ := -O1 -fno-omit-frame-pointer -Iuserspace -Ibpf
TEST_LIBS_attach := $(LOADER_LIB_OBJS)
TEST_LDLIBS_attach = $(LOADER_LIBS)
TEST_NEEDS_attach = $(LOADER) $(ATTACH_TRIGGER) $(ATTACH_TRIGGER_SO) $(WORKLOAD_BINS)

# ---- make demo ----
demo: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory build-all
	@./scripts/demo.sh

# ---- tests/inject/progs: programs memprof-bpf injects the malloc host into
# while they run (never started under LD_PRELOAD), and two it must refuse ----
INJECT_PROGS_DIR := $(BUILD)/tests/inject/progs
INJECT_PROGS := $(INJECT_PROGS_DIR)/sites $(INJECT_PROGS_DIR)/sites_cxx \
	$(INJECT_PROGS_DIR)/libsite.so $(INJECT_PROGS_DIR)/sites.py \
	$(INJECT_PROGS_DIR)/static_wait $(INJECT_PROGS_DIR)/seccomp_wait \
	$(INJECT_PROGS_DIR)/syscalls
INJECT_PROG_FLAGS := -O1 -g -rdynamic -fno-optimize-sibling-calls
INJECT_PROG_HDRS := tests/inject/progs/go_wait.h

$(INJECT_PROGS_DIR)/sites: tests/inject/progs/sites.c $(INJECT_PROG_HDRS)
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(INJECT_PROG_FLAGS) -o $@ $< -lpthread -ldl

$(INJECT_PROGS_DIR)/sites_cxx: tests/inject/progs/sites_cxx.cpp $(INJECT_PROG_HDRS)
	@mkdir -p $(@D)
	g++ -std=c++17 $(WARN) $(INJECT_PROG_FLAGS) -o $@ $<

$(INJECT_PROGS_DIR)/libsite.so: tests/inject/progs/libsite.c
	@mkdir -p $(@D)
	$(CC) -std=c11 $(WARN) $(INJECT_PROG_FLAGS) -fPIC -shared -o $@ $<

$(INJECT_PROGS_DIR)/sites.py: tests/inject/progs/sites.py
	@mkdir -p $(@D)
	cp $< $@

$(INJECT_PROGS_DIR)/static_wait: tests/inject/progs/static_wait.c
	@mkdir -p $(@D)
	$(CC) -std=c11 $(WARN) -O1 -static -o $@ $<

$(INJECT_PROGS_DIR)/syscalls: tests/inject/progs/syscalls.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -O1 -o $@ $< -lpthread

$(INJECT_PROGS_DIR)/seccomp_wait: tests/inject/progs/seccomp_wait.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -O1 -o $@ $<

EXTRA_CFLAGS_tests/inject/ := -DINJECT_BUILD_DIR='"$(BUILD)"' -Iuserspace
TEST_NEEDS_inject = $(LOADER) $(PRELOAD_SO) $(INJECT_PROGS)
