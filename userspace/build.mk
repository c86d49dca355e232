# userspace/: the loader, build/memprof-bpf (libbpf skeleton from bpf/),
# the attach tests (tests/attach/) and `make demo`.

LOADER := $(BUILD)/memprof-bpf
LOADER_SRCS := userspace/main.c userspace/tracer.c userspace/environ_check.c
# The ELF, /proc and folded-output parts, also linked into the tests.
LOADER_LIB_SRCS := userspace/elfimage.c userspace/procmaps.c userspace/symbolize.c \
	userspace/folded.c userspace/control.c userspace/target.c
LOADER_LIB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(LOADER_LIB_SRCS))
LOADER_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(sort $(LOADER_SRCS) $(LOADER_LIB_SRCS)))
LOADER_LIBS := -lbpf -lelf -lz

EXTRA_CFLAGS_userspace/ := -I$(BUILD)

# The tracer includes the generated skeleton.
$(BUILD)/obj/userspace/tracer.o: $(BPF_SKEL) bpf/memprof.h
$(LOADER_OBJS): bpf/memprof.h

$(LOADER): $(LOADER_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(LOADER_LIBS)

ALL_TARGETS += $(LOADER)

# ---- tests/attach: a deterministic probe trigger and the Criterion tests ----
ATTACH_TRIGGER := $(BUILD)/attach-trigger
ATTACH_TEST := $(BUILD)/tests/test-attach
# Real frames in the trigger: no inlining of sites, no tail calls.
EXTRA_CFLAGS_tests/attach/ := -O1 -fno-omit-frame-pointer -fno-optimize-sibling-calls \
	-fno-inline -Iuserspace

$(ATTACH_TRIGGER): $(BUILD)/obj/tests/attach/trigger.o
	$(CC) $(CFLAGS) $^ -o $@ -lm

# The same trigger in a shared library, run by a small executable.
ATTACH_TRIGGER_LIB := $(BUILD)/libattach-trigger.so
ATTACH_TRIGGER_SO := $(BUILD)/attach-trigger-so
$(BUILD)/obj/tests/attach/trigger_lib.o: tests/attach/trigger.c

$(ATTACH_TRIGGER_LIB): $(BUILD)/obj/tests/attach/trigger_lib.o
	$(CC) $(CFLAGS) -shared $^ -o $@ -lm

$(ATTACH_TRIGGER_SO): $(BUILD)/obj/tests/attach/trigger_so_main.o $(ATTACH_TRIGGER_LIB)
	$(CC) $(CFLAGS) $< -o $@ -L$(BUILD) -lattach-trigger -Wl,-rpath,'$$ORIGIN'

ATTACH_TEST_OBJS := $(BUILD)/obj/tests/attach/test_attach.o \
	$(BUILD)/obj/tests/attach/attach_util.o $(BUILD)/obj/tests/attach/test_elfimage.o \
	$(BUILD)/obj/tests/attach/test_errors.o $(BUILD)/obj/tests/attach/test_workload.o
$(ATTACH_TEST_OBJS): bpf/memprof.h tests/attach/attach_util.h

$(ATTACH_TEST): $(ATTACH_TEST_OBJS) $(LOADER_LIB_OBJS) | $(LOADER) $(ATTACH_TRIGGER) \
		$(ATTACH_TRIGGER_SO)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $^ -o $@ -lcriterion -lelf -lz -lm

ALL_TARGETS += $(ATTACH_TRIGGER) $(ATTACH_TRIGGER_SO)
TEST_BINS += $(ATTACH_TEST)

# ---- make demo ----
demo: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory build-all
	@./scripts/demo.sh
