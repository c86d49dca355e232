# The README's example tracker: build/example-site-tracker.
EXAMPLE_OBJS := $(BUILD)/obj/examples/site_tracker.o

$(BUILD)/example-site-tracker: $(EXAMPLE_OBJS) $(RT_LIB) $(BUILD)/libmemprof.a
	$(CC) -rdynamic -o $@ $(EXAMPLE_OBJS) $(RT_LIB) $(BUILD)/libmemprof.a $(MEMPROF_LIBS) -ldl

ALL_TARGETS += $(BUILD)/example-site-tracker
