# The Python host (runtime-probes/hosts/python/): build/libmemprof-python.so,
# injected by `memprof-bpf attach` into a running CPython 3.11.  It carries
# the memprof core and the malloc host's sampler, sampled-block table,
# flusher and own-code range (their objects, linked as they are), behind
# CPython's allocator domains.  It links no libpython: the API is looked up
# in the process (cpython.c).  frames.c is built against CPython 3.11's
# internal headers (Debian's python3.11-dev).  docs/python-host.md
# describes it; tests in tests/python/.

PYHOST_DIR := runtime-probes/hosts/python
PYHOST_SRCS := $(wildcard $(PYHOST_DIR)/*.c)
PYHOST_OBJS := $(PYHOST_SRCS:%.c=$(BUILD)/obj/%.o) \
	$(foreach f,sampler sampled_blocks flusher callstack,$(BUILD)/obj/$(PRELOAD_DIR)/$(f).o)
PYHOST_SO := $(BUILD)/libmemprof-python.so
PYHOST_EXPORTS := $(PYHOST_DIR)/exports.map
PYHOST_PY_INCLUDE := /usr/include/python3.11

EXTRA_CFLAGS_$(PYHOST_DIR)/ := -fvisibility=hidden -ftls-model=initial-exec \
	-Iruntime-probes/core -I$(PRELOAD_DIR) -I$(PYHOST_PY_INCLUDE)

ALL_TARGETS += $(PYHOST_SO)

$(PYHOST_SO): $(PYHOST_OBJS) $(BUILD)/libmemprof.a $(PYHOST_EXPORTS)
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-z,defs -o $@ -Wl,-soname,libmemprof-python.so \
		-Wl,--version-script=$(PYHOST_EXPORTS) $(PYHOST_OBJS) \
		-Wl,--whole-archive $(BUILD)/libmemprof.a -Wl,--no-whole-archive \
		$(MEMPROF_LIBS) -ldl -lpthread -lm

# ---- Tests (tests/python/): Debian's /usr/bin/python3 running the scripts
# in tests/python/progs/, attached by the loader ----
EXTRA_CFLAGS_tests/python/ := -Iuserspace -DPYTHON_BUILD_DIR='"$(BUILD)"' -DPYTHON_PROGS_DIR='"tests/python/progs"'
TEST_NEEDS_python := $(PYHOST_SO) $(LOADER)
PYHOST_TEST_PROGS := $(BUILD)/tests/python/progs/fake_cpython $(BUILD)/tests/python/progs/embed_app
TEST_NEEDS_python += $(PYHOST_TEST_PROGS)

$(BUILD)/tests/python/progs/fake_cpython: tests/python/progs/fake_cpython.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -O1 -rdynamic -o $@ $<

# Embeds CPython through Debian's libpython3.11.so (python3.11-dev).
$(BUILD)/tests/python/progs/embed_app: tests/python/progs/embed_app.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -O1 -I$(PYHOST_PY_INCLUDE) -o $@ $< -lpython3.11 -lm
