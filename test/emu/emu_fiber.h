/*===- emu_fiber.h - TESTS ONLY: coroutines for the emulated GPU threads ---===*
 *
 * The CUDA driver emulator (cuda_emu.c) runs the threads of a block as
 * coroutines on one OS thread and switches between them at every barrier
 * and warp operation: millions of switches in one backward pass. glibc's
 * swapcontext makes a sigprocmask system call at each of them (it saves
 * and restores the signal mask, which the emulated threads never change),
 * and that call was 85% of the emulator's time. On x86-64 these fibers
 * switch in a few instructions instead: the callee-saved registers and the
 * stack pointer, nothing else (the MXCSR and x87 control words, callee-saved
 * too, are never changed by the emulated kernels). Elsewhere, and under
 * AddressSanitizer (which must see each stack switch: it intercepts
 * swapcontext), they are ucontext's.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFC_EMU_FIBER_H
#define TFC_EMU_FIBER_H

#include <stddef.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TFC_EMU_FIBER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TFC_EMU_FIBER_ASAN 1
#endif

#if defined(__x86_64__) && !defined(TFC_EMU_FIBER_ASAN)
#define TFC_EMU_FIBER_X86_64 1
typedef struct emu_fiber {
  void *sp; /* the saved stack pointer; the registers lie on that stack */
} emu_fiber;
#else
#include <ucontext.h>
typedef struct emu_fiber {
  ucontext_t context;
} emu_fiber;
#endif

/* Makes `fiber` start entry() on the stack [stack, stack + size) when it is
 * first switched to. entry must not return: it ends by switching away from
 * its fiber for good. A fiber is made again to reuse its stack. */
void emu_fiber_make(emu_fiber *fiber, char *stack, size_t size,
                    void (*entry)(void));

/* Saves the running code's registers in `from` and resumes `to`; returns
 * when something switches back to `from`. `from` needs no making. */
void emu_fiber_switch(emu_fiber *from, emu_fiber *to);

#endif
