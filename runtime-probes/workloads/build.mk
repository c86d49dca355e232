# The bundled workloads, programs on the reference runtime (rt):
# build/workload-sites, build/workload-seed and build/workload-seed-nohook
# (the same seed workload on the no-hook runtime, for the benchmarks).

WORKLOAD_DIR := runtime-probes/workloads
WORKLOAD_BINS := $(BUILD)/workload-sites $(BUILD)/workload-seed $(BUILD)/workload-seed-nohook
ALL_TARGETS += $(WORKLOAD_BINS)

$(BUILD)/workload-sites: $(BUILD)/obj/$(WORKLOAD_DIR)/sites.o
$(BUILD)/workload-seed: $(BUILD)/obj/$(WORKLOAD_DIR)/seed.o
$(BUILD)/workload-sites $(BUILD)/workload-seed: $(BUILD)/obj/$(WORKLOAD_DIR)/options.o \
		$(RT_LIB) $(BUILD)/libmemprof.a
	$(CC) $(CFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(MEMPROF_LIBS) $(LDLIBS)

$(BUILD)/workload-seed-nohook: $(BUILD)/nohook/obj/$(WORKLOAD_DIR)/seed.o \
		$(BUILD)/nohook/obj/$(WORKLOAD_DIR)/options.o $(RT_NOHOOK_LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
