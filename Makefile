# memprof-bpf top-level build.
#
# Order of the BPF side: vmlinux/vmlinux.h -> build/memprof.bpf.o ->
# build/memprof.skel.h -> build/memprof-bpf.  Each folder owns a fragment
# (*.mk) that adds its sources, outputs and tests to the variables below.

BUILD := build
CC := gcc
CLANG := clang
BPFTOOL := bpftool

WARN := -Wall -Wextra -Werror
CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) -fPIC -MMD -MP \
	-Iruntime-probes/include
# Sanitized variant of the core, the reference runtime and their tests.
SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_CFLAGS := $(filter-out -O2,$(CFLAGS)) -O1 $(SAN)
LDLIBS := -lpthread -lm

PUBLIC_HDRS := runtime-probes/include/memprof.h runtime-probes/include/memprof_host.h \
	runtime-probes/include/memprof_probe_abi.h runtime-probes/include/rt.h

# Filled by the fragments.
ALL_TARGETS :=
TEST_BINS :=
BENCH_DEPS :=

DEPS_STAMP := $(BUILD)/.deps-installed

.PHONY: all deps test demo bench clean format
all: $(DEPS_STAMP) build-all

$(DEPS_STAMP): scripts/install-deps.sh
	@./scripts/install-deps.sh
	@mkdir -p $(@D) && touch $@

deps:
	@./scripts/install-deps.sh

-include runtime-probes/core.mk
-include runtime-probes/rt.mk
-include runtime-probes/preload.mk
-include bpf/build.mk
-include userspace/build.mk
-include tests/build.mk
-include bench/build.mk
-include examples/build.mk

.PHONY: build-all
build-all: $(ALL_TARGETS)

# Generic compile rules: plain and sanitized objects mirror the source tree.
$(BUILD)/obj/%.o: %.c $(PUBLIC_HDRS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(EXTRA_CFLAGS_$(dir $<)) -c $< -o $@

$(BUILD)/san/obj/%.o: %.c $(PUBLIC_HDRS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) $(EXTRA_CFLAGS_$(dir $<)) -c $< -o $@

test: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory build-all $(TEST_BINS)
	@./tests/run-tests.sh $(TEST_BINS)

clean:
	rm -rf $(BUILD) vmlinux/vmlinux.h

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
