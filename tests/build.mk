# tests/: one rule builds every test program.
#
# An area is a folder tests/<area>/ holding test_*.c files.  Each
# tests/<area>/test_NAME.c is one Criterion program, build/tests/<area>/test_NAME,
# linked with the area's helpers (its other *.c files), the shared helpers of
# tests/lib/, and what the fragment of the code under test sets:
#
#   TEST_LIBS_<area>      archives and objects linked in (prerequisites)
#   TEST_SAN_LIBS_<area>  the same for the sanitized build
#   TEST_LDLIBS_<area>    -l flags
#   TEST_NEEDS_<area>     programs the tests run (built first)
#   TEST_SAN_AREAS        areas also built with ASan+UBSan, as
#                         build/san/tests/<area>/test_NAME
#   EXTRA_CFLAGS_tests/<area>/  compile flags of the area's sources
#
# A new tests/<area>/test_x.c (even in a new area) needs no Makefile edit.
# Programs that tests run (tests/<area>/progs/) are built by the area's
# fragment.  Binaries are linked to a temporary name and renamed, so a run in
# progress never executes a half-written file.  Tests export their symbols
# (-rdynamic) so dladdr can name the functions that allocated.

TEST_LIB_SRCS := $(wildcard tests/lib/*.c)
TEST_SRCS := $(wildcard tests/*/test_*.c)
TEST_AREAS := $(sort $(patsubst tests/%/,%,$(dir $(TEST_SRCS))))
$(foreach a,$(TEST_AREAS),$(eval TEST_HELPERS_$(a) := \
	$(filter-out tests/$(a)/test_%.c,$(wildcard tests/$(a)/*.c)) $(TEST_LIB_SRCS)))

TESTS_PLAIN := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
TESTS_SAN := $(patsubst tests/%.c,$(BUILD)/san/tests/%, \
	$(filter $(foreach a,$(TEST_SAN_AREAS),tests/$(a)/%),$(TEST_SRCS)))
TEST_BINS += $(TESTS_PLAIN) $(TESTS_SAN)

# Every test source (and program under tests/) sees the shared helpers'
# header, testlib.h.
$(BUILD)/obj/tests/%.o: CFLAGS += -Itests/lib
$(BUILD)/san/obj/tests/%.o: SAN_CFLAGS += -Itests/lib

# The area of a stem "area/test_x", and the helper objects of that area
# under an object folder ("obj/" or "san/obj/").
test_area = $(firstword $(subst /, ,$(1)))
test_helper_objs = $(patsubst %.c,$(BUILD)/$(1)%.o,$(TEST_HELPERS_$(call test_area,$(2))))

# $(call test_link,FLAGS,AREA): objects, the area's archives in one group
# (they may need each other), then the -l flags.
test_link = $(CC) $(1) -rdynamic -o $@.$$$$.tmp $(filter %.o,$^) \
	-Wl,--start-group $(filter %.a,$^) -Wl,--end-group \
	$(TEST_LDLIBS_$(2)) $(call pkg_libs,criterion) $(LDLIBS) && mv -f $@.$$$$.tmp $@

.SECONDEXPANSION:
$(TESTS_PLAIN): $(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $$(call test_helper_objs,obj/,$$*) \
		$$(TEST_LIBS_$$(call test_area,$$*)) | $$(TEST_NEEDS_$$(call test_area,$$*))
	@mkdir -p $(@D)
	$(call test_link,,$(call test_area,$*))

$(TESTS_SAN): $(BUILD)/san/tests/%: $(BUILD)/san/obj/tests/%.o \
		$$(call test_helper_objs,san/obj/,$$*) $$(TEST_SAN_LIBS_$$(call test_area,$$*)) \
		| $$(TEST_NEEDS_$$(call test_area,$$*))
	@mkdir -p $(@D)
	$(call test_link,$(SAN),$(call test_area,$*))

# Keep the objects (intermediate files of the rules above).
.SECONDARY: $(patsubst %.c,$(BUILD)/obj/%.o,$(TEST_SRCS) $(TEST_LIB_SRCS)) \
	$(patsubst %.c,$(BUILD)/san/obj/%.o,$(TEST_SRCS) $(TEST_LIB_SRCS))
