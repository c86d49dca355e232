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
