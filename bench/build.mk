# bench/: the benchmark harness (`make bench`) and its own small programs.
#
# `make bench` installs the peers it compares against, builds everything it
# can (a missing input becomes "not available" in the tables, not a
# failure), then runs bench/run.sh, which writes bench/results/latest.md.
# BENCH_QUICK=1 gives a fast smoke run with fewer iterations and rounds.

BENCH_BIN := $(BUILD)/bench
BENCH_PACKAGES := bpftrace bpfcc-tools heaptrack libjemalloc2 libjemalloc-dev \
	ocaml-nox ocaml-findlib linux-headers-amd64 time python3

# Frame pointers: the eBPF peers unwind user stacks by them.
EXTRA_CFLAGS_bench/ := -fno-omit-frame-pointer

BENCH_TOOLS := $(BENCH_BIN)/mallocmix $(BENCH_BIN)/probeloop $(BENCH_BIN)/mallocpair
# gcscale links the reference runtime and the core.
BENCH_RT_TOOLS := $(BENCH_BIN)/gcscale
ALL_TARGETS += $(BENCH_TOOLS) $(BENCH_RT_TOOLS)
BENCH_DEPS += $(BENCH_RT_TOOLS)
# Table 8 injects into two of the injection tests' programs.
BENCH_DEPS += $(INJECT_PROGS_DIR)/hammer $(INJECT_PROGS_DIR)/stale_words

$(BENCH_BIN)/mallocmix: $(BUILD)/obj/bench/mallocmix.o
	@mkdir -p $(@D)
	$(CC) $^ -o $@ -ldl

$(BENCH_BIN)/probeloop: $(BUILD)/obj/bench/probeloop.o
	@mkdir -p $(@D)
	$(CC) $^ -o $@

# mallocpair finds memprof_start with dlsym (it runs plain and preloaded).
$(BENCH_BIN)/mallocpair: $(BUILD)/obj/bench/mallocpair.o
	@mkdir -p $(@D)
	$(CC) $^ -o $@ -ldl

$(BENCH_BIN)/gcscale: $(BUILD)/obj/bench/gcscale.o $(RT_LIB) $(BUILD)/libmemprof.a
	@mkdir -p $(@D)
	$(CC) $^ -o $@ $(MEMPROF_LIBS) $(LDLIBS)

.PHONY: bench bench-tools
bench-tools: $(BENCH_TOOLS)

bench: $(DEPS_STAMP)
	@./scripts/install-deps.sh $(BENCH_PACKAGES)
	@$(MAKE) --no-print-directory -k build-all $(BENCH_DEPS) || \
		echo "bench: some targets did not build; their figures will say 'not available'"
	@$(MAKE) --no-print-directory bench-tools
	@./bench/run.sh
