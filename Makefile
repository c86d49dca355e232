# memprof-bpf top-level build.
#
# Order of the BPF side: vmlinux/vmlinux.h -> build/memprof.bpf.o ->
# build/memprof.skel.h -> build/memprof-bpf.  Each folder owns a fragment
# (build.mk) that adds its sources, outputs and test settings to the
# variables below; tests/build.mk builds every tests/<area>/test_*.c with one
# rule.

.DELETE_ON_ERROR:

BUILD := build
CC := gcc
CLANG := clang
BPFTOOL := bpftool
PKG_CONFIG := pkg-config

WARN := -Wall -Wextra -Werror
CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) -fPIC -MMD -MP \
	-Iruntime-probes/include
# Sanitized variant of the core, the reference runtime and their tests;
# MEMPROF_DEBUG compiles the core's MEMPROF_ASSERTs in (core.h).
SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_CFLAGS := $(filter-out -O2,$(CFLAGS)) -O1 $(SAN) -DMEMPROF_DEBUG
LDLIBS := -lpthread -lm

# Libraries come from pkg-config, asked once, when first used (after the
# packages are installed): $(call pkg_libs,NAME).
pkg_libs = $(or $(PKG_LIBS_$(1)),$(eval PKG_LIBS_$(1) := $(shell $(PKG_CONFIG) --libs $(1)))$(PKG_LIBS_$(1)))

PUBLIC_HDRS := $(wildcard runtime-probes/include/*.h)

# Filled by the fragments.
ALL_TARGETS :=
TEST_BINS :=
BENCH_DEPS :=

DEPS_STAMP := $(BUILD)/.deps-installed
# MEMPROF_DEPS=none: install nothing (a packager's build, such as
# memprof_probe.opam's, whose depexts name the Debian packages it needs).
ifeq ($(MEMPROF_DEPS),none)
DEPS_STAMP := deps-none
.PHONY: deps-none
deps-none: ;
else
$(DEPS_STAMP): scripts/install-deps.sh
	@./scripts/install-deps.sh
	@mkdir -p $(@D) && touch $@
endif

.PHONY: all deps test test-long test-loaded demo bench clean format format-check
all: $(DEPS_STAMP) build-all

deps:
	@./scripts/install-deps.sh

include runtime-probes/core/build.mk
include runtime-probes/hosts/rt/build.mk
include runtime-probes/hosts/preload/build.mk
include runtime-probes/hosts/python/build.mk
include runtime-probes/hosts/ocaml/build.mk
include runtime-probes/hosts/ocaml-attach/build.mk
include runtime-probes/workloads/build.mk
include bpf/build.mk
include userspace/build.mk
include bench/build.mk
include examples/build.mk
include install.mk
# Last: it turns the test settings of the fragments above into rules.
include tests/build.mk

.PHONY: build-all
build-all: $(ALL_TARGETS)

# Generic compile rules: plain and sanitized objects mirror the source tree.
# EXTRA_CFLAGS_<dir>/ adds flags for the sources of one folder.
$(BUILD)/obj/%.o: %.c $(PUBLIC_HDRS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(EXTRA_CFLAGS_$(dir $<)) -c $< -o $@

$(BUILD)/san/obj/%.o: %.c $(PUBLIC_HDRS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) $(EXTRA_CFLAGS_$(dir $<)) -c $< -o $@

test: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory build-all $(TEST_BINS)
	@./tests/run-tests.sh $(TEST_BINS)

# The random-instant tests at their full counts (MEMPROF_TEST_LONG=1).
test-long: $(DEPS_STAMP)
	@MEMPROF_TEST_LONG=1 $(MAKE) --no-print-directory test

# make test three times in a row beside one CPU hog per core (RUNS=N).
test-loaded: $(DEPS_STAMP)
	@./scripts/test-loaded.sh

clean:
	rm -rf $(BUILD) vmlinux/vmlinux.h

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cpp')

format-check:
	clang-format --dry-run -Werror $$(git ls-files '*.c' '*.h' '*.cpp')

include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
