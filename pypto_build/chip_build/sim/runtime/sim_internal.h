// sim_internal.h -- the objects behind the C interface of sim_runtime.h, shared by its sources.

#ifndef PYPTO_BUILD_SIM_INTERNAL_H_
#define PYPTO_BUILD_SIM_INTERNAL_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pto_orchestration_api.h"

namespace pypto_sim {

enum class CoreType : int32_t { AIV = 0, AIC = 1 };

const char* core_type_name(CoreType core_type);

using KernelEntry = void (*)(int64_t*);
using OrchestrationEntry = void (*)(const ChipTaskArgs&);
using OrchestrationConfigFn = PTO2OrchestrationConfig (*)(const ChipTaskArgs&);

struct Kernel {
  int32_t func_id;
  CoreType core_type;
  std::string name;
  void* handle;
  KernelEntry entry;
};

// A chip sub-build, loaded: the orchestration and its kernels. The config function is optional
// (upstream falls back to a default that expects nothing).
struct Callable {
  void* handle = nullptr;
  OrchestrationEntry entry = nullptr;
  OrchestrationConfigFn config = nullptr;
  std::vector<Kernel> kernels;

  const Kernel* kernel(int32_t func_id) const;
  ~Callable();
};

// One comm domain: a window per rank (the caller's memory, filled by it: given contents or zeros)
// and each rank's CommContext.
struct Domain {
  uint64_t window_bytes = 0;
  std::vector<void*> windows;
  std::vector<CommContext> contexts;
};

class RankRun;

// The order PyPTO's runtime imposes on the tasks of one run, and the accesses it leaves
// unordered (order.cpp): explicit dependencies, creator edges and the TensorMap's producer
// lookups, scopes.
class TaskOrder {
 public:
  // Record the task `name` about to run with `args` and its descriptors (runtime-created
  // outputs materialized) and set `id`; false after reporting an invalid explicit dependency or
  // an access no dependency orders after an earlier task's conflicting one.
  bool add(const std::string& name, const CoreTaskArgs& args, std::vector<ChipTensor>* tensors,
           RankRun& run, PTO2TaskId* id);
  void begin_scope(bool manual, RankRun& run);
  void end_scope();

 private:
  // A producer the TensorMap holds: a buffer's element range and the task that wrote it.
  struct Entry {
    uint64_t buffer;
    uint64_t begin;
    uint64_t end;
    int32_t version;
    uint32_t task;
  };
  struct Creator {
    uint64_t buffer;
    uint32_t task;
  };
  // The bytes one tensor argument of a task covers, by absolute address.
  struct Access {
    uint64_t begin;
    uint64_t end;
    bool writes;
    int32_t arg;
    TensorArgType tag;
  };
  struct Task {
    std::string name;
    std::vector<uint64_t> ancestors;  // bitset over the run's earlier tasks
    std::vector<Access> accesses;
  };

  bool check(const Task& task, uint32_t index, RankRun& run) const;

  std::vector<Entry> producers_;
  std::vector<Creator> creators_;
  std::vector<Task> tasks_;  // the first kTrackedTasks tasks of the run
  uint32_t submitted_ = 0;   // tasks of the run so far (their ids are 0, 1, ...)
  std::vector<bool> scopes_;  // true for a MANUAL scope
  int32_t manual_depth_ = 0;
};

// One execution of an orchestration on one rank. Errors latch as the device runtime latches
// them: the first code wins, later ones are only logged, and after any error the rank's later
// submissions are dropped. Block threads report into it concurrently with the orchestration.
class RankRun {
 public:
  RankRun(int32_t rank, std::string next_level, int32_t aiv_capacity, int32_t aic_capacity);

  int32_t rank() const { return rank_; }
  // The sub-build being run (set once; read by the crash report, so never reallocated).
  const char* next_level() const { return next_level_.c_str(); }
  int32_t sync_start_limit(CoreType core_type) const;

  // Latch `code` unless an error is already latched; every report is logged.
  void report(int32_t code, const std::string& message);
  // Refuse the run before its orchestration starts (PYPTO_SIM_RUN_REFUSED).
  void refuse(const std::string& message);
  bool failed() const { return code_.load(std::memory_order_acquire) != 0; }
  int32_t code() const { return code_.load(std::memory_order_acquire); }
  // The latched error's message ("" before any error). It is written once, when the code
  // latches, so the pointer stays valid and unchanged for the rest of the run's life.
  const char* message() const;

  void log(const std::string& line);
  int32_t log_count() const;
  // The line at `index`; the pointer stays valid while the run lives (lines are only added).
  const char* log_line(int32_t index) const;

  // A zeroed, packed row-major buffer owned by the run (alloc_tensors, TensorCreateInfo).
  ChipTensor create_tensor(DataType dtype, const uint32_t* shapes, uint32_t ndims);

  void count_task() { tasks_.fetch_add(1, std::memory_order_relaxed); }
  int32_t task_count() const { return tasks_.load(std::memory_order_relaxed); }
  void abandon() { abandoned_.store(true, std::memory_order_release); }
  bool abandoned() const { return abandoned_.load(std::memory_order_acquire); }

  // The callable whose orchestration this run is executing.
  const Callable* callable = nullptr;
  // Its tasks' order on PyPTO's runtime; used by the orchestration thread only.
  TaskOrder order;

 private:
  const int32_t rank_;
  const std::string next_level_;
  const int32_t aiv_capacity_;
  const int32_t aic_capacity_;
  std::atomic<int32_t> code_{0};
  std::atomic<int32_t> tasks_{0};
  std::atomic<bool> abandoned_{false};
  mutable std::mutex mutex_;
  std::string message_;
  std::vector<std::unique_ptr<std::string>> log_;
  std::vector<std::unique_ptr<uint8_t[]>> allocations_;
};

// What the running thread belongs to: set on a rank's orchestration thread for the duration of
// the entry, and on every block thread of a task. Hooks called without one (a kernel run outside
// the runtime) only print.
struct ThreadContext {
  RankRun* run = nullptr;
  // Block threads only: the task's kernel and this block's identity, for error messages.
  const char* kernel_name = nullptr;
  int32_t func_id = -1;
  int32_t block_idx = 0;
  int32_t block_num = 0;
};

ThreadContext& thread_context();

// Called first on every thread that runs a kernel or an orchestration: when crash reports are
// on (pypto_sim_report_crashes), gives the thread an alternate signal stack, so a kernel that
// overflows its stack is still reported (crash.cpp). Cheap and a no-op otherwise.
void prepare_thread_for_crash_reports();

// What the exception being handled is, for a message: its type and, for a std::exception, what().
std::string current_exception_text();

// Element size of `dtype` in bytes; 0 for a value outside the enumeration.
uint64_t element_size(DataType dtype);

// Fill a descriptor; `is_contiguous` and the element extent follow from shapes and strides.
void describe(ChipTensor* tensor, uint64_t addr, uint64_t nbytes, uint64_t start_offset,
              DataType dtype, uint32_t ndims, const uint32_t* shapes, const uint32_t* strides);

// printf into a std::string.
std::string vformat(const char* format, va_list values);
std::string format(const char* format, ...) __attribute__((format(printf, 1, 2)));

// The longest a kernel signal wait may spin, and a task may run.
uint64_t wait_timeout_ns();
void set_timeouts(uint64_t wait_ns, uint64_t task_ns);

// Kernel block starts and returns so far (pypto_sim_progress).
uint64_t progress();

// Work run on the process's pool of block threads (block_pool.cpp): run(index) once for each
// index handed out with start_pooled, each on a thread of its own.
class PoolJob {
 public:
  virtual ~PoolJob() = default;
  virtual void run(int32_t index) = 0;
};

// How long a thread about to sleep first yields and looks again: a block thread waiting for its
// next block, a submitter for its task's blocks. In a run, the next block or the last return is
// usually microseconds away, and a sleep then costs a futex wake-up and a context switch on
// each side. Long enough to cover a small collective's round trip, short against a kernel's
// work (an idle thread yields the CPU to any thread with work at each turn).
constexpr std::chrono::nanoseconds kSpinBudget{50'000};

// Yield until `ready()` or `budget` has passed; whether it became ready.
template <typename Ready>
bool spin_until(Ready ready, std::chrono::nanoseconds budget) {
  if (ready()) {
    return true;
  }
  const auto deadline = std::chrono::steady_clock::now() + budget;
  do {
    std::this_thread::yield();
    if (ready()) {
      return true;
    }
  } while (std::chrono::steady_clock::now() < deadline);
  return false;
}

// Run job->run(index) on a fiber of the pool (block_pool.cpp); throws std::system_error when a
// needed stack or carrier thread cannot be had. The pool keeps `job` alive until that call
// returns.
void start_pooled(const std::shared_ptr<PoolJob>& job, int32_t index);

struct PoolCounts {
  uint32_t threads;  // blocks' execution contexts (fibers) made so far (none is ever freed)
  uint32_t idle;     // waiting for a block
};
PoolCounts pool_counts();

// On a fiber that shares its carrier (block_pool.cpp): hand the turn to the carrier's next fiber
// and return true when it is this fiber's turn again. Elsewhere false at once.
bool switch_turn();
// One turn of a kernel's unsatisfied signal wait (pypto_sim_wait_turn): switch_turn, or where
// that does not switch, yield the CPU.
void wait_turn();

// Run one submitted task to completion on the current rank; its runtime-allocated outputs are
// appended to `outputs` (tasks.cpp).
void submit_task(const MixedKernels& kernels, const CoreTaskArgs& args,
                 TaskOutputTensors* outputs);
// Allocate the TensorCreateInfo outputs of `args` without running a task (alloc_tensors).
void alloc_tensors(const CoreTaskArgs& args, TaskOutputTensors* outputs);

}  // namespace pypto_sim

// The hooks rendered kernels call (pypto_build/portability.h, pypto_build/mix_kernel.h), which
// the runtime also calls itself.
extern "C" {
void pypto_sim_report_error(int32_t code, const char* message);
void pypto_sim_wait_turn(void);
}

#endif  // PYPTO_BUILD_SIM_INTERNAL_H_
