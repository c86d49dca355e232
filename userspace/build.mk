# userspace/: the loader, build/memprof-bpf (libbpf skeleton from bpf/), and
# `make demo`.  Tests: tests/attach/ (the loader against real processes:
# a deterministic probe trigger in tests/attach/progs/, the workloads).
#
# The loader's sources are every userspace/*.c and userspace/*/*.c (one
# folder a job, userspace/README.md): a new file or a new folder needs no
# edit here.

LOADER := $(BUILD)/memprof-bpf
# The pprof encoder: C from userspace/output/profile.proto (protoc-c).
PPROF_PROTO := userspace/output/profile.proto
PPROF_GEN_DIR := $(BUILD)/gen/userspace
PPROF_GEN_C := $(PPROF_GEN_DIR)/profile.pb-c.c
PPROF_GEN_H := $(PPROF_GEN_DIR)/profile.pb-c.h
PPROF_GEN_OBJ := $(BUILD)/obj/gen/profile.pb-c.o
LOADER_SRCS := $(wildcard userspace/*.c userspace/*/*.c)
LOADER_MAIN := userspace/cmd/main.c
# Every loader source but main.c is also linked into the tests.
LOADER_LIB_SRCS := $(filter-out $(LOADER_MAIN),$(LOADER_SRCS))
LOADER_LIB_OBJS := $(LOADER_LIB_SRCS:%.c=$(BUILD)/obj/%.o) $(PPROF_GEN_OBJ)
LOADER_OBJS := $(LOADER_MAIN:%.c=$(BUILD)/obj/%.o) $(LOADER_LIB_OBJS)
# libdw/libdwfl symbolize, protobuf-c encodes pprof, zlib gzips it;
# libstdc++ demangles C++, opened when a C++ name needs it (demangle.c).
LOADER_LIBS = $(call pkg_libs,libbpf) $(call pkg_libs,libdw) $(call pkg_libs,libelf) \
	$(call pkg_libs,libprotobuf-c) $(call pkg_libs,zlib) -lm

# Every folder of the loader: its headers by their folder ("trace/tracer.h")
# from userspace/, the skeleton and the generated encoder, the maps shared
# with bpf/, and the core's hash map ("core/idmap.h", the tree's one).
LOADER_CFLAGS := -Iuserspace -I$(BUILD) -Ibpf -I$(PPROF_GEN_DIR) -Iruntime-probes
$(foreach d,$(sort $(dir $(LOADER_SRCS))),$(eval EXTRA_CFLAGS_$(d) := $(LOADER_CFLAGS)))

# The loader includes the generated skeleton and the generated encoder.
$(LOADER_OBJS): $(BPF_SKEL) bpf/memprof_maps.h $(PPROF_GEN_H)

$(PPROF_GEN_C) $(PPROF_GEN_H) &: $(PPROF_PROTO) | $(DEPS_STAMP)
	@mkdir -p $(PPROF_GEN_DIR)
	protoc-c --proto_path=$(dir $(PPROF_PROTO)) --c_out=$(PPROF_GEN_DIR) $(PPROF_PROTO)

$(PPROF_GEN_OBJ): $(PPROF_GEN_C) $(PPROF_GEN_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -I$(PPROF_GEN_DIR) -c $< -o $@

$(LOADER): $(LOADER_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(LOADER_LIBS)

ALL_TARGETS += $(LOADER)

# ---- tests/attach/progs: a deterministic probe trigger, the same trigger in
# a shared library run by a small executable ----
ATTACH_PROGS := $(BUILD)/tests/attach/progs
ATTACH_TRIGGER := $(ATTACH_PROGS)/trigger
ATTACH_TRIGGER_LIB := $(ATTACH_PROGS)/libattach-trigger.so
ATTACH_TRIGGER_SO := $(ATTACH_PROGS)/trigger-so
# Real frames in the trigger: no inlining of sites, no tail calls.
EXTRA_CFLAGS_tests/attach/progs/ := -O1 -fno-omit-frame-pointer -fno-optimize-sibling-calls \
	-fno-inline

$(ATTACH_TRIGGER): $(BUILD)/obj/tests/attach/progs/trigger.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $^ -o $@ -lm

$(BUILD)/obj/tests/attach/progs/trigger_lib.o: tests/attach/progs/trigger.c

$(ATTACH_TRIGGER_LIB): $(BUILD)/obj/tests/attach/progs/trigger_lib.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -shared $^ -o $@ -lm

$(ATTACH_TRIGGER_SO): $(BUILD)/obj/tests/attach/progs/trigger_so_main.o $(ATTACH_TRIGGER_LIB)
	$(CC) $(CFLAGS) $< -o $@ -L$(ATTACH_PROGS) -lattach-trigger -Wl,-rpath,'$$ORIGIN'

# A multithreaded malloc workload (probes from the preload) for the attach
# storm, and a static program without probes.
ATTACH_THREADS := $(ATTACH_PROGS)/threads
ATTACH_STATIC := $(ATTACH_PROGS)/static-sleeper

$(ATTACH_THREADS): $(BUILD)/obj/tests/attach/progs/threads.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $^ -o $@ -lpthread

$(ATTACH_STATIC): $(BUILD)/obj/tests/attach/progs/static_sleeper.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -static $^ -o $@

# Blocks of 1 to 300 fields, one site per size, on the reference runtime.
ATTACH_SIZES := $(ATTACH_PROGS)/sizes

$(ATTACH_SIZES): $(BUILD)/obj/tests/attach/progs/sizes.o $(RT_LIB) $(BUILD)/libmemprof.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(MEMPROF_LIBS) $(LDLIBS)

ALL_TARGETS += $(ATTACH_TRIGGER) $(ATTACH_TRIGGER_SO) $(ATTACH_THREADS) $(ATTACH_STATIC) \
	$(ATTACH_SIZES)

# ---- Test settings (tests/build.mk) ----
EXTRA_CFLAGS_tests/attach/ := -O1 -fno-omit-frame-pointer -Iuserspace -Ibpf
TEST_LIBS_attach := $(LOADER_LIB_OBJS)
TEST_LDLIBS_attach = $(LOADER_LIBS)
TEST_NEEDS_attach = $(LOADER) $(ATTACH_TRIGGER) $(ATTACH_TRIGGER_SO) $(WORKLOAD_BINS) \
	$(ATTACH_THREADS) $(ATTACH_STATIC) $(ATTACH_SIZES) $(PRELOAD_SO)

# ---- make demo ----
demo: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory build-all
	@./scripts/demo.sh

# ---- tests/inject/progs: programs memprof-bpf injects the malloc host into
# while they run (never started under LD_PRELOAD), and two it must refuse ----
INJECT_PROGS_DIR := $(BUILD)/tests/inject/progs
INJECT_PROGS := $(INJECT_PROGS_DIR)/sites $(INJECT_PROGS_DIR)/sites_cxx \
	$(INJECT_PROGS_DIR)/libsite.so $(INJECT_PROGS_DIR)/sites.py $(INJECT_PROGS_DIR)/sites.pl \
	$(INJECT_PROGS_DIR)/static_wait $(INJECT_PROGS_DIR)/seccomp_wait \
	$(INJECT_PROGS_DIR)/syscalls $(INJECT_PROGS_DIR)/hammer $(INJECT_PROGS_DIR)/setxid \
	$(INJECT_PROGS_DIR)/planted.so $(INJECT_PROGS_DIR)/smallstack $(INJECT_PROGS_DIR)/leader_exits \
	$(INJECT_PROGS_DIR)/fpstate $(INJECT_PROGS_DIR)/in_allocator $(INJECT_PROGS_DIR)/go_like \
	$(INJECT_PROGS_DIR)/privmain $(INJECT_PROGS_DIR)/libprivuser.so \
	$(INJECT_PROGS_DIR)/stale_words $(INJECT_PROGS_DIR)/libnss_memproftest.so.2
INJECT_PROG_FLAGS := -O1 -g -rdynamic -fno-optimize-sibling-calls
INJECT_PROG_HDRS := tests/inject/progs/go_wait.h

$(INJECT_PROGS_DIR)/sites: tests/inject/progs/sites.c $(INJECT_PROG_HDRS)
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(INJECT_PROG_FLAGS) -o $@ $< -lpthread -ldl

$(INJECT_PROGS_DIR)/sites_cxx: tests/inject/progs/sites_cxx.cpp $(INJECT_PROG_HDRS)
	@mkdir -p $(@D)
	g++ -std=c++17 $(WARN) $(INJECT_PROG_FLAGS) -o $@ $<

$(INJECT_PROGS_DIR)/libsite.so: tests/inject/progs/libsite.c
	@mkdir -p $(@D)
	$(CC) -std=c11 $(WARN) $(INJECT_PROG_FLAGS) -fPIC -shared -o $@ $<

# An NSS module the C library loads by itself (inject-sites --nss memproftest).
$(INJECT_PROGS_DIR)/libnss_memproftest.so.2: tests/inject/progs/nss_module.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(INJECT_PROG_FLAGS) -fPIC -shared -o $@ $< -ldl

$(INJECT_PROGS_DIR)/planted.so: tests/inject/progs/planted.c
	@mkdir -p $(@D)
	$(CC) -std=c11 $(WARN) -O1 -fPIC -shared -o $@ $<

$(INJECT_PROGS_DIR)/sites.py $(INJECT_PROGS_DIR)/sites.pl: $(INJECT_PROGS_DIR)/%: tests/inject/progs/%
	@mkdir -p $(@D)
	cp $< $@

$(INJECT_PROGS_DIR)/static_wait: tests/inject/progs/static_wait.c
	@mkdir -p $(@D)
	$(CC) -std=c11 $(WARN) -O1 -static -o $@ $<

# Bound at load time (-z now): a lazy binding at its first read() would
# leave a stale return address into the dynamic loader above the blocked
# call, which the injector's conservative stack scan refuses.
$(INJECT_PROGS_DIR)/syscalls: tests/inject/progs/syscalls.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -O1 -Wl,-z,now -o $@ $<

$(INJECT_PROGS_DIR)/leader_exits: tests/inject/progs/leader_exits.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -O1 -o $@ $< -lpthread

# A library bound (RTLD_DEEPBIND) to a private allocator, and its program.
$(INJECT_PROGS_DIR)/libprivalloc.so: tests/inject/progs/privalloc.c
	@mkdir -p $(@D)
	$(CC) -std=c11 $(WARN) -O1 -fPIC -shared -fno-builtin -o $@ $<

$(INJECT_PROGS_DIR)/libprivuser.so: tests/inject/progs/privuser.c $(INJECT_PROGS_DIR)/libprivalloc.so
	$(CC) -std=c11 $(WARN) -O1 -fPIC -shared -fno-builtin -o $@ $< \
		-L$(INJECT_PROGS_DIR) -lprivalloc -Wl,-rpath,'$$ORIGIN'

$(INJECT_PROGS_DIR)/privmain: tests/inject/progs/privmain.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -O1 -o $@ $< -ldl

$(INJECT_PROGS_DIR)/stale_words: tests/inject/progs/stale_words.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -O1 -o $@ $<

$(INJECT_PROGS_DIR)/go_like: tests/inject/progs/go_like.c
	@mkdir -p $(@D)
	$(CC) -std=c11 $(WARN) -O1 -o $@ $<

$(INJECT_PROGS_DIR)/in_allocator: tests/inject/progs/in_allocator.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -O1 -Wl,-z,now -o $@ $< -lpthread

$(INJECT_PROGS_DIR)/fpstate: tests/inject/progs/fpstate.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -O1 -Wl,-z,now -o $@ $< -lpthread

$(INJECT_PROGS_DIR)/smallstack: tests/inject/progs/smallstack.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -O1 -Wl,-z,now -o $@ $< -lpthread

$(INJECT_PROGS_DIR)/hammer: tests/inject/progs/hammer.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -O2 -Wl,-z,now -o $@ $< -lpthread

$(INJECT_PROGS_DIR)/setxid: tests/inject/progs/setxid.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -O1 -Wl,-z,now -o $@ $< -lpthread

$(INJECT_PROGS_DIR)/seccomp_wait: tests/inject/progs/seccomp_wait.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -O1 -o $@ $< -lpthread

EXTRA_CFLAGS_tests/inject/ := -DINJECT_BUILD_DIR='"$(BUILD)"' -Iuserspace
TEST_NEEDS_inject = $(LOADER) $(PRELOAD_SO) $(INJECT_PROGS)

# ---- tests/output/progs: programs with known allocation sites, run under the
# malloc host, whose profiles the output tests read (pprof through go tool
# pprof, the SVG, the text report) ----
OUTPUT_PROGS_DIR := $(BUILD)/tests/output/progs
OUTPUT_PROG_C := $(wildcard tests/output/progs/*.c)
OUTPUT_PROG_CXX := $(wildcard tests/output/progs/*.cpp)
OUTPUT_PROGS := $(OUTPUT_PROG_C:tests/output/progs/%.c=$(OUTPUT_PROGS_DIR)/%) \
	$(OUTPUT_PROG_CXX:tests/output/progs/%.cpp=$(OUTPUT_PROGS_DIR)/%)
# -O2 -g: optimised code with DWARF (inline frames, lines).
OUTPUT_PROG_FLAGS := -O2 -g -Iruntime-probes/include -Itests/output/progs
OUTPUT_PROG_LINK := -L$(BUILD) -lmemprof-preload -Wl,-rpath,'$$ORIGIN/../../..'

$(OUTPUT_PROGS_DIR)/%: tests/output/progs/%.c tests/output/progs/wait_tracer.h $(PRELOAD_SO) \
		$(PUBLIC_HDRS)
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(OUTPUT_PROG_FLAGS) -o $@ $< $(OUTPUT_PROG_LINK)

$(OUTPUT_PROGS_DIR)/%: tests/output/progs/%.cpp tests/output/progs/wait_tracer.h $(PRELOAD_SO) \
		$(PUBLIC_HDRS)
	@mkdir -p $(@D)
	g++ -std=c++17 $(WARN) $(OUTPUT_PROG_FLAGS) -o $@ $< $(OUTPUT_PROG_LINK)

# The SQLite program calls libsqlite3 (libsqlite3-dev) through its C API.
$(OUTPUT_PROGS_DIR)/sqlite_sites: OUTPUT_PROG_LINK += -lsqlite3

# Stripped copies of known_sites for tests/output/test_debuginfo.c:
#   known_sites-stripped   no .symtab, no DWARF, no .gnu_debuglink; its debug
#                          file (same build id) is debuginfod/known_sites.debug,
#                          out of the places the loader looks by itself: a
#                          test serves it from a local debuginfod
#   known_sites-minidebug  stripped, with MiniDebugInfo as Fedora adds it: the
#                          function symbols .dynsym lacks, in a symbol-only
#                          ELF file compressed with xz, as section .gnu_debugdata
OUTPUT_STRIPPED := $(OUTPUT_PROGS_DIR)/known_sites-stripped
OUTPUT_MINIDEBUG := $(OUTPUT_PROGS_DIR)/known_sites-minidebug
OUTPUT_DEBUGFILE := $(OUTPUT_PROGS_DIR)/debuginfod/known_sites.debug
OUTPUT_PROGS += $(OUTPUT_STRIPPED) $(OUTPUT_MINIDEBUG) $(OUTPUT_DEBUGFILE)

$(OUTPUT_STRIPPED): $(OUTPUT_PROGS_DIR)/known_sites
	strip --strip-all -o $@.tmp $< && mv -f $@.tmp $@

$(OUTPUT_DEBUGFILE): $(OUTPUT_PROGS_DIR)/known_sites
	@mkdir -p $(@D)
	objcopy --only-keep-debug $< $@.tmp && mv -f $@.tmp $@

$(OUTPUT_MINIDEBUG): $(OUTPUT_PROGS_DIR)/known_sites | $(DEPS_STAMP)
	@rm -rf $@.d && mkdir -p $@.d
	nm -D --format=posix --defined-only $< | awk '{print $$1}' | sort >$@.d/dynsyms
	nm --format=posix --defined-only $< | awk '$$2 == "T" || $$2 == "t" {print $$1}' | \
		sort >$@.d/funcsyms
	comm -13 $@.d/dynsyms $@.d/funcsyms >$@.d/keep
	objcopy --only-keep-debug $< $@.d/debug
	objcopy -S --remove-section .gdb_index --remove-section .comment \
		--keep-symbols=$@.d/keep $@.d/debug $@.d/mini
	xz $@.d/mini
	strip --strip-all -o $@.d/prog $<
	objcopy --add-section .gnu_debugdata=$@.d/mini.xz $@.d/prog
	mv -f $@.d/prog $@ && rm -rf $@.d

ALL_TARGETS += $(OUTPUT_PROGS)

EXTRA_CFLAGS_tests/output/ := -Iuserspace -Ibpf -I$(PPROF_GEN_DIR)
TEST_LIBS_output := $(LOADER_LIB_OBJS)
TEST_LDLIBS_output = $(LOADER_LIBS)
TEST_NEEDS_output = $(LOADER) $(PRELOAD_SO) $(OUTPUT_PROGS)

# ---- tests/cli: the subcommands (attach with several PIDs, top through a
# pseudo-terminal, list, diff, --every, bad arguments, make install) on real
# processes; they reuse tests/attach's helpers and trigger ----
EXTRA_CFLAGS_tests/cli/ := -O1 -Iuserspace -Ibpf -Itests/attach -I$(PPROF_GEN_DIR)
TEST_LIBS_cli := $(LOADER_LIB_OBJS) $(BUILD)/obj/tests/attach/attach_util.o
TEST_LDLIBS_cli = $(LOADER_LIBS) -lutil
TEST_NEEDS_cli = $(LOADER) $(ATTACH_TRIGGER) $(PRELOAD_SO) $(BUILD)/libmemprof.a \
	$(BUILD)/libmemprof.so $(OCAML_PKG_FILES) $(OCAML_TEST_PROGS_DIR)/sites

# ---- tests/fuzz: libFuzzer targets of the loader's parsers (clang, with
# ASan+UBSan), run for a bounded time by tests/fuzz/test_fuzz.c ----
FUZZ_PROGS := $(BUILD)/tests/fuzz/progs
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 $(WARN) -Iruntime-probes/include -Iuserspace \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_BINS := $(FUZZ_PROGS)/fuzz-elf $(FUZZ_PROGS)/fuzz-maps $(FUZZ_PROGS)/fuzz-diff

$(FUZZ_PROGS)/fuzz-elf: tests/fuzz/progs/fuzz_elf.c userspace/symbols/elfimage.c \
		userspace/symbols/elfimage.h \
		| $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) $(filter %.c,$^) -o $@ $(call pkg_libs,libelf)

$(FUZZ_PROGS)/fuzz-maps: tests/fuzz/progs/fuzz_maps.c userspace/symbols/procmaps.c \
		userspace/symbols/procmaps.h \
		| $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) $(filter %.c,$^) -o $@

# diff's readers and writers: the output folder (pprof, sites, intervals) and
# what output.c links in (the symbolizer), built with the fuzzer's sanitizers.
$(FUZZ_PROGS)/fuzz-diff: tests/fuzz/progs/fuzz_diff.c userspace/cmd/diff_input.c \
		userspace/cmd/diff_output.c userspace/cmd/diff.h userspace/cli.c \
		$(wildcard userspace/output/*.c userspace/symbols/*.c) $(PPROF_GEN_C) $(PPROF_GEN_H) \
		| $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -Ibpf -I$(PPROF_GEN_DIR) -Iruntime-probes \
		$(filter %.c,$^) -o $@ $(call pkg_libs,libprotobuf-c) $(call pkg_libs,zlib) \
		$(call pkg_libs,libdw) $(call pkg_libs,libelf) -lstdc++ -lm

TEST_NEEDS_fuzz = $(FUZZ_BINS)
# ---- tests/lifetimes: lifetimes and the timeline (userspace/output/lifetimes.c,
# userspace/output/timeline.c) on programs of known lifetimes and known live-memory
# steps, run under the malloc host ----
LIFETIMES_PROGS_DIR := $(BUILD)/tests/lifetimes/progs
LIFETIMES_PROGS := $(patsubst tests/lifetimes/progs/%.c,$(LIFETIMES_PROGS_DIR)/%, \
	$(wildcard tests/lifetimes/progs/*.c))

$(LIFETIMES_PROGS_DIR)/%: tests/lifetimes/progs/%.c tests/output/progs/wait_tracer.h \
		$(PRELOAD_SO) $(PUBLIC_HDRS)
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -O2 -g -Iruntime-probes/include -Itests/output/progs \
		-o $@ $< -L$(BUILD) -lmemprof-preload -Wl,-rpath,'$$ORIGIN/../../..'

ALL_TARGETS += $(LIFETIMES_PROGS)

EXTRA_CFLAGS_tests/lifetimes/ := -Iuserspace -Ibpf -I$(BUILD) -I$(PPROF_GEN_DIR)
TEST_LIBS_lifetimes := $(LOADER_LIB_OBJS)
TEST_LDLIBS_lifetimes = $(LOADER_LIBS)
TEST_NEEDS_lifetimes = $(LOADER) $(PRELOAD_SO) $(LIFETIMES_PROGS)
