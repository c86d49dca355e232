/*
 * The injector's call stub (inject_stub.h): x86-64 code that the injector
 * copies into the target and runs on one of its threads, so that the call
 * to dlopen restores the thread by itself, whatever happens to the loader.
 *
 * The injector writes the stub and its data (below) into the slack after
 * the end of libc's text segment (the rest of its last page: file padding,
 * never executed), sets only the thread's PC to the stub's entry (and rax,
 * orig_rax for a system call to restart: inject.c), and lets it run.  From
 * then on nothing depends on the loader:
 *
 *   1. Keep the red zone, push the resume address (from the data), the
 *      flags and every general register on the thread's own stack: 264
 *      bytes, the only bytes of that stack the stub uses.
 *   2. mmap a stack of its own (STUB_STACK_BYTES): a thread with a small
 *      stack never runs dlopen on it.  If that fails, skip to 8.
 *   3. Copy what it needs from the data (dlopen, dlerror, the memfd's
 *      name, the stack length) into registers and its own region, so
 *      that a later injection may rewrite the data.
 *   4. Block every asynchronous signal except glibc's SIGCANCEL (32) and
 *      SIGSETXID (33), which a set*id call in another thread waits for;
 *      the old mask is kept in its own region.
 *   5. Save the extended FP state (XSAVE with every enabled feature, or
 *      FXSAVE without XSAVE).  Make an empty memfd (memfd_create, sealing
 *      allowed) and wait at the marker (below) with STUB_MARKER_MEMFD: the
 *      injector writes the library's bytes, the ones it checked, into it
 *      through /proc/PID/fd, writes "/proc/thread-self/fd/N" over the name in
 *      the stub's region, then seals the memfd against writes, growth and
 *      shrinking in one call: the seals are the commit.  Only a memfd so
 *      sealed is opened: dlopen(that path, RTLD_NOW), then dlerror if it
 *      returned NULL; without the seals (the injector died or gave up),
 *      no dlopen, result STUB_ERR_NOT_SEALED.  Close the memfd (the
 *      mapping keeps it) and restore the FP state.
 *   6. Wait at the marker with STUB_MARKER_RESULT: the handle and the
 *      dlerror string (or an error code) in r9 and r8.
 *
 *   The marker: rt_sigtimedwait for no signal, again after every signal,
 *   with the marker's number in rsi (the info pointer, never written for
 *   an empty set) and two values in r9 and r8, which it ignores.  The
 *   injector sees the thread blocked there (/proc/PID/task/TID/syscall:
 *   the call, its registers, its PC at memprof_inject_stub_marker_end,
 *   which only this stub has), reads what it needs, and makes the call
 *   return STUB_ACK, which ends the wait; with no injector left, the wait
 *   ends after STUB_MARKER_WAIT_S.
 *
 *   7. Put the signal mask back, return to the thread's stack, unmap its
 *      own stack.
 *   8. Pop the registers and the flags and return to the resume address,
 *      skipping the red zone again (ret $128): the thread goes on exactly
 *      where it was stopped, or restarts the system call it was in.
 *
 * If mmap or memfd_create fails the result carries handle 0 and the
 * negative errno.  The stub calls nothing of the target but dlopen and
 * dlerror, and makes its system calls itself.
 */
#include "inject_stub.h"

/* clang-format off */
__asm__(
"	.section .rodata.memprof_inject_stub,\"a\"\n"
"	.balign 64\n"
"	.globl memprof_inject_stub\n"
"	.hidden memprof_inject_stub\n"
"memprof_inject_stub:\n"
"	lea -128(%rsp), %rsp\n"
"	pushq .Lresume(%rip)\n"
"	pushfq\n"
"	push %rax\n"
"	push %rbx\n"
"	push %rcx\n"
"	push %rdx\n"
"	push %rsi\n"
"	push %rdi\n"
"	push %rbp\n"
"	push %r8\n"
"	push %r9\n"
"	push %r10\n"
"	push %r11\n"
"	push %r12\n"
"	push %r13\n"
"	push %r14\n"
"	push %r15\n"
"	cld\n"
"	mov %rsp, %r13\n"
	/* 2. mmap(NULL, len, PROT_READ | PROT_WRITE,
	 *         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0) */
"	xor %edi, %edi\n"
"	mov .Lstack_len(%rip), %rsi\n"
"	mov $3, %edx\n"
"	mov $0x24022, %r10d\n"
"	mov $-1, %r8\n"
"	xor %r9d, %r9d\n"
"	mov $9, %eax\n"
"	syscall\n"
"	cmp $-4096, %rax\n"
"	ja .Lno_stack\n"
"	mov %rax, %r12\n"
	/* 3. Our region: [0] old mask, [8] handle, [16] error, [24] length,
	 *    [32] the memfd, [64] its name, then the path to open
	 *    (STUB_REGION_PATH); the stack grows down from its end. */
"	mov .Lstack_len(%rip), %rax\n"
"	mov %rax, 24(%r12)\n"
"	mov .Ldlopen(%rip), %r14\n"
"	mov .Ldlerror(%rip), %r15\n"
"	lea 64(%r12), %rdi\n"
"	lea .Lname(%rip), %rsi\n"
"	mov $" STUB_STR(STUB_PATH_BYTES) ", %ecx\n"
"	rep movsb\n"
	/* 4. rt_sigprocmask(SIG_BLOCK, &block, &old, 8) */
"	xor %edi, %edi\n"
"	lea .Lblock(%rip), %rsi\n"
"	mov %r12, %rdx\n"
"	mov $8, %r10d\n"
"	mov $14, %eax\n"
"	syscall\n"
	/* 5. The save area's size: XSAVE's for the enabled features, or 512. */
"	mov $1, %eax\n"
"	cpuid\n"
"	xor %ebp, %ebp\n"
"	bt $27, %ecx\n"
"	jnc 1f\n"
"	mov $0xd, %eax\n"
"	xor %ecx, %ecx\n"
"	cpuid\n"
"	mov $1, %ebp\n"
"	jmp 2f\n"
"1:	mov $512, %ebx\n"
"2:	mov %r12, %rax\n"
"	add 24(%r12), %rax\n"
"	sub %rbx, %rax\n"
"	and $-64, %rax\n"
"	mov %rax, %rbx\n"
"	mov %rax, %rsp\n"
"	test %ebp, %ebp\n"
"	jz 3f\n"
"	mov $-1, %eax\n"
"	mov $-1, %edx\n"
"	xsave64 (%rbx)\n"
"	jmp 4f\n"
"3:	fxsave64 (%rbx)\n"
	/* 5a. memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING) */
"4:	movq $0, 8(%r12)\n"
"	lea 64(%r12), %rdi\n"
"	mov $3, %esi\n"
"	mov $319, %eax\n"
"	syscall\n"
"	mov %rax, 16(%r12)\n"
"	cmp $-4096, %rax\n"
"	ja 5f\n"
"	mov %rax, 32(%r12)\n"
	/* 5b. The first marker: the injector fills and seals the memfd and
	 *     writes its /proc/thread-self/fd path over the name. */
"	mov $" STUB_STR(STUB_MARKER_MEMFD) ", %esi\n"
"	mov %rax, %r9\n"
"	mov %r12, %r8\n"
"	call .Lmarker\n"
	/* 5c. Sealed against writes, growth and shrinking: the injector
	 *     finished (the seals are added last, in one call).  Else no dlopen. */
"	mov 32(%r12), %edi\n"
"	mov $1034, %esi\n"
"	mov $72, %eax\n"
"	syscall\n"
"	movq $" STUB_STR(STUB_ERR_NOT_SEALED) ", 16(%r12)\n"
"	cmp $-4096, %rax\n"
"	ja 8f\n"
"	and $14, %eax\n"
"	cmp $14, %eax\n"
"	jne 8f\n"
"	lea 64(%r12), %rdi\n"
"	mov $2, %esi\n"
"	call *%r14\n"
"	mov %rax, 8(%r12)\n"
"	movq $0, 16(%r12)\n"
"	test %rax, %rax\n"
"	jnz 8f\n"
"	call *%r15\n"
"	mov %rax, 16(%r12)\n"
	/* close(fd): the mapping keeps the file. */
"8:	mov 32(%r12), %edi\n"
"	mov $3, %eax\n"
"	syscall\n"
"5:	test %ebp, %ebp\n"
"	jz 6f\n"
"	mov $-1, %eax\n"
"	mov $-1, %edx\n"
"	xrstor64 (%rbx)\n"
"	jmp 7f\n"
"6:	fxrstor64 (%rbx)\n"
	/* 6. The marker. */
"7:	mov 8(%r12), %r9\n"
"	mov 16(%r12), %r8\n"
"	mov $" STUB_STR(STUB_MARKER_RESULT) ", %esi\n"
"	call .Lmarker\n"
	/* 7. rt_sigprocmask(SIG_SETMASK, &old, NULL, 8); munmap(region, len) */
"	mov $2, %edi\n"
"	mov %r12, %rsi\n"
"	xor %edx, %edx\n"
"	mov $8, %r10d\n"
"	mov $14, %eax\n"
"	syscall\n"
"	mov %r13, %rsp\n"
"	mov %r12, %rdi\n"
"	mov 24(%r12), %rsi\n"
"	mov $11, %eax\n"
"	syscall\n"
"	jmp .Lrestore\n"
".Lno_stack:\n"
"	xor %r9d, %r9d\n"
"	mov %rax, %r8\n"
"	mov $" STUB_STR(STUB_MARKER_RESULT) ", %esi\n"
"	call .Lmarker\n"
	/* 8. */
".Lrestore:\n"
"	pop %r15\n"
"	pop %r14\n"
"	pop %r13\n"
"	pop %r12\n"
"	pop %r11\n"
"	pop %r10\n"
"	pop %r9\n"
"	pop %r8\n"
"	pop %rbp\n"
"	pop %rdi\n"
"	pop %rsi\n"
"	pop %rdx\n"
"	pop %rcx\n"
"	pop %rbx\n"
"	pop %rax\n"
"	popfq\n"
"	ret $128\n"
	/*
	 * The marker, the result in r9 (handle) and r8 (error): sleep in
	 * rt_sigtimedwait for no signal (a sleep that touches nothing of the
	 * thread: the nanosleep calls reset its restart block, which a
	 * system call interrupted by the injection may still need), again
	 * after every signal, until the injector acknowledges (it makes the
	 * call return STUB_ACK) or STUB_MARKER_WAIT_S pass.
	 */
".Lmarker:\n"
"	sub $32, %rsp\n"
"	mov %rsi, 8(%rsp)\n"
"	mov $228, %eax\n"
"	mov $1, %edi\n"
"	lea 16(%rsp), %rsi\n"
"	syscall\n"
"	mov 16(%rsp), %rax\n"
"	add $" STUB_STR(STUB_MARKER_WAIT_S) ", %rax\n"
"	mov %rax, (%rsp)\n"
"1:	lea .Lno_signals(%rip), %rdi\n"
"	mov 8(%rsp), %rsi\n"
"	lea .Lmarker_wait(%rip), %rdx\n"
"	mov $8, %r10d\n"
"	mov $128, %eax\n"
"	syscall\n"
"	.globl memprof_inject_stub_marker_end\n"
"	.hidden memprof_inject_stub_marker_end\n"
"memprof_inject_stub_marker_end:\n"
"	cmp $" STUB_STR(STUB_ACK) ", %rax\n"
"	je 2f\n"
"	mov $228, %eax\n"
"	mov $1, %edi\n"
"	lea 16(%rsp), %rsi\n"
"	syscall\n"
"	mov 16(%rsp), %rax\n"
"	cmp (%rsp), %rax\n"
"	jl 1b\n"
"2:	add $32, %rsp\n"
"	ret\n"
"	.balign 8\n"
".Lno_signals:	.quad 0\n"
".Lmarker_wait:	.quad 0, 100000000\n"
"	.balign 8\n"
"	.globl memprof_inject_stub_data\n"
"	.hidden memprof_inject_stub_data\n"
"memprof_inject_stub_data:\n"
".Lresume:	.quad 0\n"
".Ldlopen:	.quad 0\n"
".Ldlerror:	.quad 0\n"
".Lblock:	.quad 0\n"
".Lstack_len:	.quad 0\n"
".Lname:	.fill " STUB_STR(STUB_PATH_BYTES) ", 1, 0\n"
"	.globl memprof_inject_stub_end\n"
"	.hidden memprof_inject_stub_end\n"
"memprof_inject_stub_end:\n"
"	.previous\n");
/* clang-format on */
