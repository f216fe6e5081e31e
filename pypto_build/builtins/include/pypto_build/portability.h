// pypto_build/portability.h -- the communication primitives the builtin kernels are written
// against, with one implementation per target, so that the same rendered kernel source ships to
// the NPU and runs in a host simulation (docs/builtin-packages.md).
//
//   CANN side  (the device compiler defines __CCE_AICORE__): PTO-ISA communication instructions
//              -- TPUT through a UB staging tile, TNOTIFY(AtomicAdd), TWAIT(GE), ld_dev for
//              remote scalars, dcci/dsb/pipe_barrier for visibility. Needs PTO-ISA's include
//              root on the include path.
//   SIM side   (any host compiler): every window is host memory that every rank maps (threads of
//              one process in pypto-build's simulator, processes sharing one mapping in PyPTO's
//              a2a3sim / a5sim), so a remote address is an ordinary pointer; signals are
//              GCC/Clang __atomic operations on the int32 slots, payload moves with memmove.
//
// The primitives (namespace pypto_build):
//   tensor_arg / comm_context_arg     unpack args[] slots (kernel_abi.h describes the layout)
//   tensor_data<T>(t)                 element pointer of a descriptor
//   tensor_numel / tensor_row_numel   extents (row = every dim after the first)
//   remote_ptr(ctx, local, peer)      the same window offset in peer's window
//   load_i32(p)                       fresh scalar read of local GM (another core may write it)
//   remote_load_i32(p)                scalar read of a peer's window
//   store_i32(p, v)                   scalar store another core will read (after publish_fence)
//   put<T>(dst, src, n)               copy n elements; dst local or in a peer's window
//   signal_add(slot, delta)           atomic add to an int32 slot, local or remote
//   signal_wait_ge(slot, threshold)   wait until a local slot >= threshold; false on timeout
//   publish_fence()                   make every earlier put/store visible before a signal
//   report_error(code, message)       fail the task with a runtime error code
//
// Failing loudly everywhere. No runtime at the reference revision (simpler 6ebaf77) has a path
// from an AICore kernel to the runtime's error latch: a kernel is `void kernel_entry(args)` and
// only the orchestration (AICPU) can report a fatal error. So wherever no hook below takes the
// error, report_error prints the message to stderr and traps (__builtin_trap: SIGILL on x86-64,
// SIGTRAP on AArch64), which ends the simulating process -- a failed run, never a task that
// succeeds with wrong data. On the device it prints and executes trap(), which the runtime
// reports as an AICore exception. A caller still returns after report_error, for the hooks'
// sake (below), and nothing of a correct run depends on a hook.
//
// Simulation hooks. pypto-build's simulation runtime defines these C symbols; a kernel refers to
// them weakly, so a kernel shared object loads in any host runtime (PyPTO's a2a3sim / a5sim
// define neither). What they add on our simulator is a precise report instead of a trap:
//   void     pypto_sim_report_error(int32_t code, const char* message);
//       latches `code` as the task's error (first code wins, as the device runtime does) and
//       records the message; the kernel returns afterwards and the run fails with that code.
//   uint64_t pypto_sim_wait_timeout_ns(void);
//       how long one signal wait may spin (the run's timeout). A wait that runs out reports
//       SIMPLER_ERROR_SCHEDULER_TIMEOUT and returns false, so a protocol bug (a missing credit,
//       a peer that returned early) becomes an error instead of a hang or silently wrong data.
//   void     pypto_sim_wait_turn(void);
//       one turn of a signal wait that is not satisfied yet: the simulator switches to another
//       kernel block without a system call. Without it a turn yields the CPU to any thread.
// Without the second hook a wait is bounded by wait_budget_ns(): the environment variable
// PYPTO_BUILD_KERNEL_WAIT_TIMEOUT_MS if set, else half of SIMPLER_SCHEDULER_TIMEOUT_MS (the
// no-progress timeout of simpler's scheduler) if positive, else 5 s, half of that scheduler's 10 s
// default -- so the kernel's own message, which names the slot's value and the threshold, comes
// before the scheduler gives up on a core that never finishes. An expired wait then traps.
// Block identity needs no hook: the runtime fills args[SPMD_LOCAL_CONTEXT_INDEX] (kernel_abi.h).

#ifndef PYPTO_BUILD_PORTABILITY_H_
#define PYPTO_BUILD_PORTABILITY_H_

#include <cstdint>

#include "pypto_build/kernel_abi.h"

#if defined(PYPTO_BUILD_TARGET_CANN)
#include <pto/comm/pto_comm_inst.hpp>
#include <pto/pto-inst.hpp>
#define PYPTO_DEVICE __aicore__ inline
#define PYPTO_KERNEL_EXPORT __aicore__
#else
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#define PYPTO_DEVICE inline
#define PYPTO_KERNEL_EXPORT __attribute__((visibility("default")))

extern "C" {
__attribute__((weak)) void pypto_sim_report_error(int32_t code, const char* message);
__attribute__((weak)) uint64_t pypto_sim_wait_timeout_ns(void);
__attribute__((weak)) void pypto_sim_wait_turn(void);
}
#endif

namespace pypto_build {

// ---- argument unpacking and geometry (target independent) ----------------------------------

PYPTO_DEVICE __gm__ ChipTensor* tensor_arg(__gm__ int64_t* args, int32_t slot) {
  return reinterpret_cast<__gm__ ChipTensor*>(args[slot]);
}

PYPTO_DEVICE __gm__ CommContext* comm_context_arg(__gm__ int64_t* args, int32_t slot) {
  return reinterpret_cast<__gm__ CommContext*>(args[slot]);
}

template <typename T>
PYPTO_DEVICE __gm__ T* tensor_data(__gm__ ChipTensor* tensor) {
  return reinterpret_cast<__gm__ T*>(tensor->buffer.addr) + tensor->start_offset;
}

// Elements of one row: the product of every dim after the first (1 for a rank-1 tensor).
PYPTO_DEVICE int64_t tensor_row_numel(__gm__ ChipTensor* tensor) {
  int64_t numel = 1;
  for (uint32_t dim = 1; dim < tensor->ndims && dim < RUNTIME_MAX_TENSOR_DIMS; ++dim) {
    numel *= static_cast<int64_t>(tensor->shapes[dim]);
  }
  return numel;
}

PYPTO_DEVICE int64_t tensor_numel(__gm__ ChipTensor* tensor) {
  return tensor->ndims == 0 ? 0 : static_cast<int64_t>(tensor->shapes[0]) * tensor_row_numel(tensor);
}

// The address of `local` (inside this rank's window) in peer's window. Valid because every
// window-bound operand sits at the same offset in every rank's window (symmetric allocation).
template <typename T>
PYPTO_DEVICE __gm__ T* remote_ptr(__gm__ CommContext* ctx, __gm__ T* local, int64_t peer) {
  const uint64_t offset = reinterpret_cast<uint64_t>(local) - ctx->windowsIn[ctx->rankId];
  return reinterpret_cast<__gm__ T*>(ctx->windowsIn[peer] + offset);
}

#if defined(PYPTO_BUILD_TARGET_CANN)

// ---- CANN: PTO-ISA communication instructions ----------------------------------------------

// Columns of the UB staging tile every put goes through; TPUT re-chunks larger transfers.
constexpr int32_t kStageTileCols = 256;
// Elements per TPUT call; keeps PTO-ISA's int shape arithmetic far from overflow.
constexpr int64_t kMaxPutElems = int64_t{1} << 30;

PYPTO_DEVICE int32_t load_i32(__gm__ int32_t* ptr) {
  dcci(reinterpret_cast<__gm__ void*>(ptr), SINGLE_CACHE_LINE);
  return *reinterpret_cast<volatile __gm__ int32_t*>(ptr);
}

PYPTO_DEVICE int32_t remote_load_i32(__gm__ int32_t* ptr) {
  return static_cast<int32_t>(ld_dev(reinterpret_cast<__gm__ uint32_t*>(ptr), 0));
}

PYPTO_DEVICE void store_i32(__gm__ int32_t* ptr, int32_t value) {
  *reinterpret_cast<volatile __gm__ int32_t*>(ptr) = value;
  dcci(reinterpret_cast<__gm__ void*>(ptr), SINGLE_CACHE_LINE);
}

PYPTO_DEVICE void publish_fence() {
  pipe_barrier(PIPE_ALL);
  dsb(DSB_DDR);
}

template <typename T>
PYPTO_DEVICE void put(__gm__ T* dst, __gm__ const T* src, int64_t count) {
  using FlatShape = pto::Shape<1, 1, 1, 1, pto::DYNAMIC>;
  using FlatStride = pto::Stride<pto::DYNAMIC, pto::DYNAMIC, pto::DYNAMIC, pto::DYNAMIC, 1>;
  using Flat = pto::GlobalTensor<T, FlatShape, FlatStride>;
  using StageTile = pto::Tile<pto::TileType::Vec, T, 1, kStageTileCols, pto::BLayout::RowMajor,
                              pto::DYNAMIC, pto::DYNAMIC>;
  StageTile tile(1, kStageTileCols);
  pto::TASSIGN(tile, 0x0);
  for (int64_t done = 0; done < count;) {
    const int64_t chunk = count - done < kMaxPutElems ? count - done : kMaxPutElems;
    const int n = static_cast<int>(chunk);
    Flat dst_view(dst + done, FlatShape(1, 1, 1, 1, n), FlatStride(n, n, n, n, 1));
    Flat src_view(const_cast<__gm__ T*>(src) + done, FlatShape(1, 1, 1, 1, n),
                  FlatStride(n, n, n, n, 1));
    // TPUT narrows the mask on a ragged tail; reset it so the next transfer runs full width.
    tile.ColMaskInternal = n < kStageTileCols ? n : kStageTileCols;
    pto::comm::TPUT(dst_view, src_view, tile);
    done += chunk;
  }
}

PYPTO_DEVICE void signal_add(__gm__ int32_t* slot, int32_t delta) {
  pto::comm::Signal signal(slot);
  pto::comm::TNOTIFY<pto::comm::NotifyOp::AtomicAdd>(signal, delta);
}

// TWAIT spins until the condition holds (PTO-ISA asserts on a runaway spin count in debug
// builds); on the device a wait does not return false.
PYPTO_DEVICE bool signal_wait_ge(__gm__ int32_t* slot, int32_t threshold) {
  pto::comm::Signal signal(slot);
  pto::comm::TWAIT<pto::comm::WaitCmp::GE>(signal, threshold);
  return true;
}

// The device has no error channel from a kernel to the runtime's latch: print the reason and
// trap, which fails the task.
PYPTO_DEVICE void report_error(int32_t code, const char* message) {
  cce::printf("pypto_build kernel error %d: %s\n", code, message);
  trap();
}

#else

// ---- SIM: host memory, C++ atomics ---------------------------------------------------------

PYPTO_DEVICE int32_t load_i32(__gm__ int32_t* ptr) {
  return __atomic_load_n(ptr, __ATOMIC_ACQUIRE);
}

PYPTO_DEVICE int32_t remote_load_i32(__gm__ int32_t* ptr) {
  return __atomic_load_n(ptr, __ATOMIC_ACQUIRE);
}

PYPTO_DEVICE void store_i32(__gm__ int32_t* ptr, int32_t value) {
  __atomic_store_n(ptr, value, __ATOMIC_RELEASE);
}

PYPTO_DEVICE void publish_fence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

template <typename T>
PYPTO_DEVICE void put(__gm__ T* dst, __gm__ const T* src, int64_t count) {
  if (count > 0) {
    std::memmove(dst, src, static_cast<size_t>(count) * sizeof(T));
  }
}

PYPTO_DEVICE void signal_add(__gm__ int32_t* slot, int32_t delta) {
  __atomic_fetch_add(slot, delta, __ATOMIC_SEQ_CST);
}

PYPTO_DEVICE void report_error(int32_t code, const char* message) {
  if (pypto_sim_report_error != nullptr) {
    pypto_sim_report_error(code, message);
    return;
  }
  std::fprintf(stderr, "pypto_build kernel error %d: %s\n", static_cast<int>(code), message);
  std::fflush(stderr);
  __builtin_trap();
}

// The wait budget where no runtime hook gives one (module comment).
constexpr uint64_t kDefaultWaitTimeoutMs = 5000;
constexpr uint64_t kNsPerMs = 1000 * 1000;
// A day: far beyond any wait, and far from overflowing the nanoseconds.
constexpr uint64_t kMaxWaitTimeoutMs = uint64_t{24} * 3600 * 1000;

// Environment variable `name` as a positive whole number of milliseconds (at most a day, larger
// values are clamped), or 0 when it is unset, empty or anything else.
PYPTO_DEVICE uint64_t env_milliseconds(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text < '0' || *text > '9') {
    return 0;
  }
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (*end != '\0') {
    return 0;
  }
  return value < kMaxWaitTimeoutMs ? static_cast<uint64_t>(value) : kMaxWaitTimeoutMs;
}

PYPTO_DEVICE uint64_t wait_budget_ns() {
  if (pypto_sim_wait_timeout_ns != nullptr) {
    return pypto_sim_wait_timeout_ns();
  }
  constexpr const char* kOwn = "PYPTO_BUILD_KERNEL_WAIT_TIMEOUT_MS";
  const uint64_t own = env_milliseconds(kOwn);
  if (own != 0) {
    return own * kNsPerMs;
  }
  const char* given = std::getenv(kOwn);
  if (given != nullptr && *given != '\0') {
    char message[160];
    std::snprintf(message, sizeof(message),
                  "%s must be a positive whole number of milliseconds, got '%.40s'", kOwn, given);
    report_error(SIMPLER_ERROR_INVALID_ARGS, message);
  }
  // simpler's own variable, which simpler validates (0 there means its default): only a value
  // it would use counts.
  const uint64_t scheduler = env_milliseconds("SIMPLER_SCHEDULER_TIMEOUT_MS");
  return (scheduler != 0 ? (scheduler + 1) / 2 : kDefaultWaitTimeoutMs) * kNsPerMs;
}

// One turn of an unsatisfied wait (the pypto_sim_wait_turn hook).
PYPTO_DEVICE void wait_turn() {
  if (pypto_sim_wait_turn != nullptr) {
    pypto_sim_wait_turn();
    return;
  }
  std::this_thread::yield();
}

PYPTO_DEVICE bool signal_wait_ge(__gm__ int32_t* slot, int32_t threshold) {
  if (__atomic_load_n(slot, __ATOMIC_ACQUIRE) >= threshold) {
    return true;
  }
  const uint64_t budget_ns = wait_budget_ns();
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    wait_turn();
    const int32_t value = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (value >= threshold) {
      return true;
    }
    const auto waited = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::steady_clock::now() - start);
    if (static_cast<uint64_t>(waited.count()) >= budget_ns) {
      char message[160];
      std::snprintf(message, sizeof(message),
                    "signal wait timed out after %llu ns: the slot holds %d, waiting for >= %d",
                    static_cast<unsigned long long>(budget_ns), static_cast<int>(value),
                    static_cast<int>(threshold));
      report_error(SIMPLER_ERROR_SCHEDULER_TIMEOUT, message);
      return false;
    }
  }
}

#endif

}  // namespace pypto_build

#endif  // PYPTO_BUILD_PORTABILITY_H_
