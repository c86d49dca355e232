# The memprof runtime core: build/libmemprof.a, build/libmemprof.so and the
# sanitized build/san/libmemprof.a.  Link users with $(MEMPROF_LIBS).

CORE_SRCS := $(wildcard runtime-probes/core/*.c)
CORE_OBJS := $(CORE_SRCS:%.c=$(BUILD)/obj/%.o)
CORE_SAN_OBJS := $(CORE_SRCS:%.c=$(BUILD)/san/obj/%.o)

# _Unwind_Backtrace comes from libgcc_s.
MEMPROF_LIBS := -lpthread -lm -lgcc_s

# The core is linked into one relocatable object whose only global symbols
# are memprof_*: its internal helpers cannot clash with a host's names.
CORE_KEEP_GLOBALS := --wildcard --keep-global-symbol='memprof_*'
# Internal state, prefixed but not part of any interface.
CORE_LOCALS := --localize-symbol=memprof_core --localize-symbol=memprof_ts

$(BUILD)/obj/memprof-core.o: $(CORE_OBJS) runtime-probes/core.mk
	ld -r -o $@ $(filter %.o,$^)
	objcopy $(CORE_KEEP_GLOBALS) $@
	objcopy $(CORE_LOCALS) $@

$(BUILD)/san/obj/memprof-core.o: $(CORE_SAN_OBJS) runtime-probes/core.mk
	ld -r -o $@ $(filter %.o,$^)
	objcopy $(CORE_KEEP_GLOBALS) $@
	objcopy $(CORE_LOCALS) $@

$(BUILD)/libmemprof.a: $(BUILD)/obj/memprof-core.o
	rm -f $@ && ar rcs $@ $^

$(BUILD)/san/libmemprof.a: $(BUILD)/san/obj/memprof-core.o
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libmemprof.so: $(BUILD)/obj/memprof-core.o
	$(CC) -shared -Wl,-z,defs -o $@ $^ $(MEMPROF_LIBS)

ALL_TARGETS += $(BUILD)/libmemprof.a $(BUILD)/libmemprof.so $(BUILD)/san/libmemprof.a

# Quick unit tests of the core (tests/core-unit/), plain and sanitized.  The
# attach tests read the binary's own USDT notes with libelf.
CORE_UNIT_SRCS := $(wildcard tests/core-unit/*.c)
CORE_UNIT_OBJS := $(CORE_UNIT_SRCS:%.c=$(BUILD)/obj/%.o)
CORE_UNIT_SAN_OBJS := $(CORE_UNIT_SRCS:%.c=$(BUILD)/san/obj/%.o)

$(BUILD)/tests/core-unit: $(CORE_UNIT_OBJS) $(BUILD)/libmemprof.a
	@mkdir -p $(@D)
	$(CC) -o $@ $(CORE_UNIT_OBJS) $(BUILD)/libmemprof.a -lcriterion -lelf $(MEMPROF_LIBS)

$(BUILD)/san/tests/core-unit: $(CORE_UNIT_SAN_OBJS) $(BUILD)/san/libmemprof.a
	@mkdir -p $(@D)
	$(CC) $(SAN) -o $@ $(CORE_UNIT_SAN_OBJS) $(BUILD)/san/libmemprof.a -lcriterion -lelf \
		$(MEMPROF_LIBS)

ifneq ($(CORE_UNIT_SRCS),)
TEST_BINS += $(BUILD)/tests/core-unit $(BUILD)/san/tests/core-unit
endif
