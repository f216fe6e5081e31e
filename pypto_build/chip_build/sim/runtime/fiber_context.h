// fiber_context.h -- the execution contexts of the block pool's fibers (block_pool.cpp): a stack
// and the registers a switch between two contexts must keep.
//
// On x86-64 a switch saves the callee-saved registers and the floating-point control words on
// the stack it leaves and swaps stack pointers (fiber_context.cpp): a few nanoseconds, where
// swapcontext also sets the signal mask with a system call each way (about 0.9 us a round trip
// on the machines of docs/performance.md), which was most of a fiber's turn. Elsewhere the
// context is a ucontext_t.

#ifndef PYPTO_BUILD_SIM_FIBER_CONTEXT_H_
#define PYPTO_BUILD_SIM_FIBER_CONTEXT_H_

#include <cstddef>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace pypto_sim {

struct FiberContext {
#if defined(__x86_64__)
  void* stack_pointer = nullptr;  // where the registers of a switched-out context are
#else
  ucontext_t context{};
  void (*entry)(void*) = nullptr;
  void* argument = nullptr;
#endif
};

// Make `context` start entry(argument) on the stack [stack, stack + bytes) when switched to;
// entry must never return (it switches away for good instead).
void context_init(FiberContext* context, char* stack, size_t bytes, void (*entry)(void*),
                  void* argument);

// Save the running context into `from` and run `to`; returns when something switches to `from`.
void context_switch(FiberContext* from, FiberContext* to);

}  // namespace pypto_sim

#endif  // PYPTO_BUILD_SIM_FIBER_CONTEXT_H_
