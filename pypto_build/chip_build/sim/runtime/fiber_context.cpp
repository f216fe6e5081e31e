// fiber_context.cpp -- switching between fiber contexts (fiber_context.h).

#include "fiber_context.h"

#include <cstdint>

namespace pypto_sim {

#if defined(__x86_64__)

extern "C" {
// pypto_sim_context_switch(&from->stack_pointer, to->stack_pointer): push rbp, rbx, r12-r15 and
// the MXCSR and x87 control words, store the stack pointer, load the other one, pop the same.
void pypto_sim_context_switch(void** save, void* load);
// Where a new context's first switch returns to: entry (r13) called with argument (r12).
void pypto_sim_context_start();
}

asm(R"(
  .text
  .globl pypto_sim_context_switch
  .hidden pypto_sim_context_switch
  .type pypto_sim_context_switch, @function
pypto_sim_context_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size pypto_sim_context_switch, .-pypto_sim_context_switch

  .globl pypto_sim_context_start
  .hidden pypto_sim_context_start
  .type pypto_sim_context_start, @function
pypto_sim_context_start:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size pypto_sim_context_start, .-pypto_sim_context_start
)");

void context_init(FiberContext* context, char* stack, size_t bytes, void (*entry)(void*),
                  void* argument) {
  // The start address sits just below a 16-byte boundary, so that the call in
  // pypto_sim_context_start enters `entry` with the stack aligned as the ABI requires.
  auto* slot = reinterpret_cast<uint64_t*>(reinterpret_cast<uintptr_t>(stack + bytes) &
                                           ~uintptr_t{15});
  *--slot = reinterpret_cast<uint64_t>(&pypto_sim_context_start);
  *--slot = 0;                                    // rbp
  *--slot = 0;                                    // rbx
  *--slot = reinterpret_cast<uint64_t>(argument);  // r12
  *--slot = reinterpret_cast<uint64_t>(entry);     // r13
  *--slot = 0;                                    // r14
  *--slot = 0;                                    // r15
  // MXCSR 0x1f80 and x87 control word 0x037f: the ABI's initial floating-point state.
  *--slot = (uint64_t{0x037f} << 32) | uint64_t{0x1f80};
  context->stack_pointer = slot;
}

void context_switch(FiberContext* from, FiberContext* to) {
  pypto_sim_context_switch(&from->stack_pointer, to->stack_pointer);
}

#else

namespace {

void start(uint32_t high, uint32_t low) {
  auto* context = reinterpret_cast<FiberContext*>((static_cast<uintptr_t>(high) << 32) | low);
  context->entry(context->argument);
}

}  // namespace

void context_init(FiberContext* context, char* stack, size_t bytes, void (*entry)(void*),
                  void* argument) {
  getcontext(&context->context);
  context->context.uc_stack.ss_sp = stack;
  context->context.uc_stack.ss_size = bytes;
  context->context.uc_link = nullptr;
  context->entry = entry;
  context->argument = argument;
  const auto address = reinterpret_cast<uintptr_t>(context);
  makecontext(&context->context, reinterpret_cast<void (*)()>(start), 2,
              static_cast<uint32_t>(address >> 32), static_cast<uint32_t>(address));
}

void context_switch(FiberContext* from, FiberContext* to) {
  swapcontext(&from->context, &to->context);
}

#endif

}  // namespace pypto_sim
