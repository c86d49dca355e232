# tests/core: OCaml's statmemprof test suite ported to C, as Criterion
# scenarios on the reference runtime (rt) and the memprof core.  Every
# tests/core/test_*.c becomes two binaries: build/tests/core/test_* and an
# ASan+UBSan copy build/tests/core-san/test_*.
#
# Binaries are linked to a temporary name and renamed, so a run in progress
# (the tree is shared) never executes a half-written file.
#
# The scenarios need frames for their callstack checks (-O1, frame pointers,
# no sibling calls) and export their symbols (-rdynamic) so dladdr can name
# the functions that allocated.

TESTS_CORE_SRCS := $(wildcard tests/core/test_*.c)
TESTS_CORE_HELPERS := tests/core/harness.c
TESTS_CORE_NAMES := $(patsubst tests/core/%.c,%,$(TESTS_CORE_SRCS))
TESTS_CORE_BINS := $(addprefix $(BUILD)/tests/core/,$(TESTS_CORE_NAMES))
TESTS_CORE_SAN_BINS := $(addprefix $(BUILD)/tests/core-san/,$(TESTS_CORE_NAMES))

EXTRA_CFLAGS_tests/core/ := -O1 -fno-omit-frame-pointer -fno-optimize-sibling-calls

TESTS_CORE_HELPER_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(TESTS_CORE_HELPERS))
TESTS_CORE_SAN_HELPER_OBJS := $(patsubst %.c,$(BUILD)/san/obj/%.o,$(TESTS_CORE_HELPERS))
TESTS_CORE_LIBS := $(BUILD)/librt.a $(BUILD)/libmemprof.a
TESTS_CORE_SAN_LIBS := $(BUILD)/san/librt.a $(BUILD)/san/libmemprof.a
TESTS_CORE_LDLIBS = -Wl,--start-group $(1) -Wl,--end-group $(MEMPROF_LIBS) $(RT_LIBS) -lcriterion $(LDLIBS)

$(BUILD)/tests/core/test_%: $(BUILD)/obj/tests/core/test_%.o $(TESTS_CORE_HELPER_OBJS) \
		$(TESTS_CORE_LIBS)
	@mkdir -p $(@D)
	$(CC) -rdynamic -o $@.$$$$.tmp $< $(TESTS_CORE_HELPER_OBJS) \
		$(call TESTS_CORE_LDLIBS,$(TESTS_CORE_LIBS)) && mv -f $@.$$$$.tmp $@

$(BUILD)/tests/core-san/test_%: $(BUILD)/san/obj/tests/core/test_%.o \
		$(TESTS_CORE_SAN_HELPER_OBJS) $(TESTS_CORE_SAN_LIBS)
	@mkdir -p $(@D)
	$(CC) $(SAN) -rdynamic -o $@.$$$$.tmp $< $(TESTS_CORE_SAN_HELPER_OBJS) \
		$(call TESTS_CORE_LDLIBS,$(TESTS_CORE_SAN_LIBS)) && mv -f $@.$$$$.tmp $@

# Keep the objects (they are intermediate files of the pattern rules).
.SECONDARY: $(TESTS_CORE_SRCS:%.c=$(BUILD)/obj/%.o) $(TESTS_CORE_SRCS:%.c=$(BUILD)/san/obj/%.o)

# The scenarios link against the core and the runtime: build them only once
# both fragments exist.
ifneq ($(and $(wildcard runtime-probes/core.mk),$(wildcard runtime-probes/rt.mk)),)
ALL_TARGETS += $(TESTS_CORE_BINS) $(TESTS_CORE_SAN_BINS)
TEST_BINS += $(TESTS_CORE_BINS) $(TESTS_CORE_SAN_BINS)
endif

# Compile-only check of the scenarios, usable before the libraries exist.
.PHONY: tests-core-syntax
tests-core-syntax:
	@for f in $(TESTS_CORE_SRCS) $(TESTS_CORE_HELPERS); do \
		$(CC) $(filter-out -MMD -MP,$(CFLAGS)) $(EXTRA_CFLAGS_tests/core/) -fsyntax-only $$f || exit 1; \
	done
