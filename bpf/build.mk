# bpf/: the kernel side.  vmlinux/vmlinux.h -> build/memprof.bpf.o ->
# build/memprof.skel.h (the loader in userspace/ includes the skeleton).

VMLINUX_H := vmlinux/vmlinux.h
KERNEL_BTF := /sys/kernel/btf/vmlinux
BPF_OBJ := $(BUILD)/memprof.bpf.o
BPF_SKEL := $(BUILD)/memprof.skel.h
BPF_CFLAGS := -g -O2 -Wall -Werror -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 \
	-I/usr/include/x86_64-linux-gnu -Ivmlinux -Ibpf
BPF_HDRS := bpf/memprof.h runtime-probes/include/memprof_probe_abi.h $(VMLINUX_H)

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
