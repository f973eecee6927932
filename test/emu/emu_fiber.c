/*===- emu_fiber.c - TESTS ONLY: coroutines for the emulated GPU threads ---===*
 *
 * See emu_fiber.h for why these are not plain ucontext.
 *
 *===----------------------------------------------------------------------===*/

#include "emu_fiber.h"

#include <stdint.h>
#include <string.h>

#ifdef TFC_EMU_FIBER_X86_64

/* System V x86-64: rbx, rbp and r12-r15 are callee-saved; every other
 * general register is the caller's to save, which the C compiler does
 * around this call as around any other. */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl emu_fiber_switch\n"
        ".hidden emu_fiber_switch\n"
        ".type emu_fiber_switch, @function\n"
        "emu_fiber_switch:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  movq %rsp, (%rdi)\n" /* from->sp */
        "  movq (%rsi), %rsp\n" /* to->sp */
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size emu_fiber_switch, .-emu_fiber_switch\n");

void emu_fiber_make(emu_fiber *fiber, char *stack, size_t size,
                    void (*entry)(void)) {
  /* The stack as emu_fiber_switch leaves a fiber it switches away from:
   * six saved registers, then the address its `ret` goes to (entry), then
   * entry's own return address (none: entry never returns). entry starts
   * with its return address at 8 mod 16, as after a call. */
  uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
  void **sp = (void **)top;
  *--sp = NULL;
  void *start;
  memcpy(&start, &entry, sizeof start);
  *--sp = start;
  for (int i = 0; i < 6; ++i)
    *--sp = NULL; /* r15, r14, r13, r12, rbx, rbp */
  fiber->sp = sp;
}

#else

void emu_fiber_make(emu_fiber *fiber, char *stack, size_t size,
                    void (*entry)(void)) {
  getcontext(&fiber->context);
  fiber->context.uc_stack.ss_sp = stack;
  fiber->context.uc_stack.ss_size = size;
  fiber->context.uc_link = NULL;
  makecontext(&fiber->context, entry, 0);
}

void emu_fiber_switch(emu_fiber *from, emu_fiber *to) {
  swapcontext(&from->context, &to->context);
}

#endif
