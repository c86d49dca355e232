# The memprof runtime core: build/libmemprof.a, build/libmemprof.so and the
# sanitized build/san/libmemprof.a.  Link users with $(MEMPROF_LIBS).
# Tests: tests/core/ (the core driven directly, through a toy host) and
# tests/statmemprof/ (OCaml's statmemprof suite, on the reference runtime).

CORE_SRCS := $(wildcard runtime-probes/core/*.c)
CORE_OBJS := $(CORE_SRCS:%.c=$(BUILD)/obj/%.o)
CORE_SAN_OBJS := $(CORE_SRCS:%.c=$(BUILD)/san/obj/%.o)

# Call stacks are unwound with libunwind (callstack.c).
MEMPROF_LIBS = -lpthread -lm $(call pkg_libs,libunwind)

# $(call own_code_section,NAME): objcopy flags moving every code section of
# an object into one section NAME, whose bounds the final link provides as
# __start_NAME and __stop_NAME.  The core's is memprof_text: callstack.c
# drops the frames inside it from every call stack.  (GCC puts code only in
# these sections without -ffunction-sections.)
CODE_SECTIONS := .text .text.unlikely .text.hot .text.startup .text.exit
own_code_section = $(foreach s,$(CODE_SECTIONS),--rename-section $(s)=$(1))

# The core is linked into one relocatable object whose only global symbols
# are memprof_*: its internal helpers cannot clash with a host's names.
CORE_KEEP_GLOBALS := --wildcard --keep-global-symbol='memprof_*'
# Internal state, prefixed but not part of any interface.
CORE_LOCALS := --localize-symbol=memprof_core --localize-symbol=memprof_ts

$(BUILD)/obj/memprof-core.o $(BUILD)/san/obj/memprof-core.o: runtime-probes/core/build.mk
$(BUILD)/obj/memprof-core.o: $(CORE_OBJS)
$(BUILD)/san/obj/memprof-core.o: $(CORE_SAN_OBJS)
$(BUILD)/obj/memprof-core.o $(BUILD)/san/obj/memprof-core.o:
	ld -r -o $@ $(filter %.o,$^)
	objcopy $(call own_code_section,memprof_text) $@
	objcopy $(CORE_KEEP_GLOBALS) $@
	objcopy $(CORE_LOCALS) $@

$(BUILD)/libmemprof.a: $(BUILD)/obj/memprof-core.o
	rm -f $@ && ar rcs $@ $^

$(BUILD)/san/libmemprof.a: $(BUILD)/san/obj/memprof-core.o
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libmemprof.so: $(BUILD)/obj/memprof-core.o
	$(CC) -shared -Wl,-z,defs -o $@ $^ $(MEMPROF_LIBS)

ALL_TARGETS += $(BUILD)/libmemprof.a $(BUILD)/libmemprof.so $(BUILD)/san/libmemprof.a

# ---- Test settings (tests/build.mk) ----
# tests/core: the attach tests read the binary's own USDT notes with libelf.
TEST_SAN_AREAS += core statmemprof
TEST_LIBS_core := $(BUILD)/libmemprof.a
TEST_SAN_LIBS_core := $(BUILD)/san/libmemprof.a
TEST_LDLIBS_core = $(call pkg_libs,libelf) $(MEMPROF_LIBS)

# tests/statmemprof: the scenarios need frames for their callstack checks.
EXTRA_CFLAGS_tests/statmemprof/ := -O1 -fno-omit-frame-pointer -fno-optimize-sibling-calls
TEST_LIBS_statmemprof := $(BUILD)/librt.a $(BUILD)/libmemprof.a
TEST_SAN_LIBS_statmemprof := $(BUILD)/san/librt.a $(BUILD)/san/libmemprof.a
TEST_LDLIBS_statmemprof = $(MEMPROF_LIBS)

# ---- The core's threaded tests under ThreadSanitizer: the core (one
# object, its code in section memprof_text as in libmemprof.a, so the
# frame skip is the same) and tests/core/test_{malloc_host,fuzz}.c built
# with -fsanitize=thread and glibc's backtrace() instead of libunwind
# (MEMPROF_CALLSTACK_GLIBC_BACKTRACE: libunwind's thread-exit destructor
# crashes inside TSan's interceptor), against a fork-per-test stand-in for
# Criterion (tests/tsan/), which does not start under TSan.  `make tsan`
# runs it; `make test` runs it as one more test program (it prints
# Criterion's synthesis line). ----
TSAN_BIN := $(BUILD)/tsan/tests/core/threaded
TSAN_CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) -fsanitize=thread \
	-DMEMPROF_CALLSTACK_GLIBC_BACKTRACE -Iruntime-probes/include -Iruntime-probes/core
TSAN_CORE_OBJS := $(CORE_SRCS:%.c=$(BUILD)/tsan/obj/%.o)
TSAN_TEST_SRCS := tests/core/test_malloc_host.c tests/core/test_fuzz.c tests/core/toy_host.c \
	tests/tsan/runner.c

$(BUILD)/tsan/obj/%.o: %.c $(wildcard runtime-probes/core/*.h) $(PUBLIC_HDRS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(TSAN_CFLAGS) -c $< -o $@

$(BUILD)/tsan/obj/memprof-core.o: $(TSAN_CORE_OBJS) runtime-probes/core/build.mk
	ld -r -o $@ $(filter %.o,$^)
	objcopy $(call own_code_section,memprof_text) $@

$(TSAN_BIN): $(BUILD)/tsan/obj/memprof-core.o $(TSAN_TEST_SRCS) tests/core/toy_host.h \
		tests/tsan/shim/criterion/criterion.h
	@mkdir -p $(@D)
	$(CC) $(TSAN_CFLAGS) -Wno-format-zero-length -Itests/tsan/shim -Itests/core -Itests/lib \
		$(filter %.c %.o,$^) -o $@.$$$$.tmp -lpthread -lm && mv -f $@.$$$$.tmp $@

TEST_BINS += $(TSAN_BIN)

.PHONY: tsan
tsan: $(TSAN_BIN)
	./$(TSAN_BIN)
