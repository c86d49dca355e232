# bpf/: the kernel side.  vmlinux/vmlinux.h -> build/memprof.bpf.o ->
# build/memprof.skel.h (the loader in userspace/ includes the skeleton).
# memprof_maps.h is the include-free header both sides share;
# memprof_stacks.bpf.h and memprof_blocks.bpf.h are parts of memprof.bpf.c
# (its stack table, its block map).

VMLINUX_H := vmlinux/vmlinux.h
KERNEL_BTF := /sys/kernel/btf/vmlinux
BPF_OBJ := $(BUILD)/memprof.bpf.o
BPF_SKEL := $(BUILD)/memprof.skel.h

# The target architecture, in the kernel's spelling, and the multiarch
# include folder (asm/ headers for <bpf/usdt.bpf.h>), from the toolchain.
BPF_MACHINE := $(firstword $(subst -, ,$(shell $(CC) -dumpmachine)))
BPF_ARCH_NAMES := x86_64:x86 aarch64:arm64 riscv64:riscv powerpc64le:powerpc s390x:s390
BPF_ARCH := $(or $(patsubst $(BPF_MACHINE):%,%,$(filter $(BPF_MACHINE):%,$(BPF_ARCH_NAMES))),$(BPF_MACHINE))
BPF_MULTIARCH_INC := /usr/include/$(shell $(CC) -print-multiarch)
BPF_CFLAGS := -g -O2 -Wall -Werror -target bpf -mcpu=v3 -D__TARGET_ARCH_$(BPF_ARCH) \
	-I$(BPF_MULTIARCH_INC) -Ivmlinux -Ibpf -Iruntime-probes/include
BPF_HDRS := $(wildcard bpf/*.h) runtime-probes/include/memprof_probe_abi.h $(VMLINUX_H)

$(VMLINUX_H): | $(DEPS_STAMP)
	@test -r $(KERNEL_BTF) || { echo "bpf: $(KERNEL_BTF) missing: this kernel has no BTF (CONFIG_DEBUG_INFO_BTF)" >&2; exit 1; }
	@mkdir -p $(@D)
	$(BPFTOOL) btf dump file $(KERNEL_BTF) format c > $@.tmp && mv $@.tmp $@

$(BPF_OBJ): bpf/memprof.bpf.c $(BPF_HDRS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BPF_SKEL): $(BPF_OBJ)
	$(BPFTOOL) gen skeleton $< name memprof_bpf > $@.tmp && mv $@.tmp $@

ALL_TARGETS += $(BPF_SKEL)
