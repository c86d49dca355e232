# rt: the reference generational runtime (runtime-probes/hosts/rt/), the
# first host of the core.
#
# Outputs: build/librt.a, build/san/librt.a (ASan+UBSan) and
# build/nohook/librt.a (compiled with -DRT_NO_MEMPROF: no memprof hook at
# all).  Tests: tests/rt/ (GC correctness with sampling off, rt as a memprof
# host, the workloads as programs), plain, sanitized, and for the GC tests
# also against the no-hook runtime.

RT_DIR := runtime-probes/hosts/rt
RT_SRCS := $(wildcard $(RT_DIR)/*.c)
RT_LIB := $(BUILD)/librt.a
RT_SAN_LIB := $(BUILD)/san/librt.a
RT_NOHOOK_LIB := $(BUILD)/nohook/librt.a

ALL_TARGETS += $(RT_LIB) $(RT_SAN_LIB) $(RT_NOHOOK_LIB)

$(RT_LIB): $(RT_SRCS:%.c=$(BUILD)/obj/%.o)
$(RT_SAN_LIB): $(RT_SRCS:%.c=$(BUILD)/san/obj/%.o)
$(RT_NOHOOK_LIB): $(RT_SRCS:%.c=$(BUILD)/nohook/obj/%.o)
# Each archive holds one object whose code is all in section rt_text:
# runtime.c gives that range to the core, which drops rt's frames from the
# top of every call stack (own_code_section: runtime-probes/core/build.mk).
$(RT_LIB) $(RT_SAN_LIB) $(RT_NOHOOK_LIB): runtime-probes/hosts/rt/build.mk
$(RT_LIB) $(RT_SAN_LIB) $(RT_NOHOOK_LIB):
	@mkdir -p $(@D)
	ld -r -o $(@:.a=.o) $(filter %.o,$^)
	objcopy $(call own_code_section,rt_text) $(@:.a=.o)
	rm -f $@ && $(AR) rcs $@ $(@:.a=.o)

# The no-hook variant: same sources, one macro (see rt_memprof.h).
$(BUILD)/nohook/obj/%.o: %.c $(PUBLIC_HDRS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DRT_NO_MEMPROF $(EXTRA_CFLAGS_$(dir $<)) -c $< -o $@

# ---- Test settings (tests/build.mk) ----
# tests/rt/ includes rt_internal.h.
EXTRA_CFLAGS_tests/rt/ := -I$(RT_DIR)
TEST_SAN_AREAS += rt
TEST_LIBS_rt := $(RT_LIB) $(BUILD)/libmemprof.a
TEST_SAN_LIBS_rt := $(RT_SAN_LIB) $(BUILD)/san/libmemprof.a
TEST_LDLIBS_rt = $(MEMPROF_LIBS)
# tests/rt/test_workloads.c runs the workload binaries.
TEST_NEEDS_rt = $(WORKLOAD_BINS)

# The GC tests again on the no-hook runtime: it must work (and link) with no
# memprof at all.  A GC test is a tests/rt/test_*.c that uses rt.h and not
# memprof.h; it is linked by the same rule as every test, from its plain
# object.
RT_GC_TEST_SRCS := $(shell grep -L '"memprof' $$(grep -l '"rt.h"' tests/rt/test_*.c))
RT_NOHOOK_TESTS := $(RT_GC_TEST_SRCS:tests/%.c=$(BUILD)/nohook/tests/%)
TEST_BINS += $(RT_NOHOOK_TESTS)
$(RT_NOHOOK_TESTS): $(BUILD)/nohook/tests/%: $(BUILD)/obj/tests/%.o $(RT_NOHOOK_LIB)
	@mkdir -p $(@D)
	$(call test_link,,rt-nohook)
TEST_LDLIBS_rt-nohook =
