// tasks.cpp -- the functions generated orchestrations and rendered kernels call into: task
// submission and execution, error reporting, runtime allocation, logs, wait timeouts (the
// pypto_sim_rt_* side of the simulator's pto_orchestration_api.h, and the kernels' hooks).
//
// A submitted task runs to completion before rt_submit_*_task returns, which orders it after
// every earlier task of the rank; the device runtime orders far less, so before a task runs the
// rank's TaskOrder (order.cpp) checks that the runtime's own dependencies order it after every
// earlier task it conflicts with, and fails the run where they do not. Running in submission
// order is what makes a collective's blocks meet their peers' blocks: every rank runs its own
// orchestration, concurrently with the others. A task of launch width B runs as B blocks started
// together (one fiber per block, or three for a MIX cluster: fibers of the process's pool,
// block_pool.cpp, which a block that computes turns into a thread of its own), each calling its
// kernel_entry with its own 50-slot argument array: the tensor descriptors, the scalars, &LocalContext{block_idx, B} at
// SPMD_LOCAL_CONTEXT_INDEX and the core's GlobalContext (its sub-block id) at
// SPMD_GLOBAL_CONTEXT_INDEX.

#include <cxxabi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <system_error>

#include "sim_internal.h"
#include "sim_runtime.h"

namespace pypto_sim {

namespace {

// The binding sets both before any run; these defaults are its own (10 s per wait, the device
// runtime's default scheduler timeout in simulation, and four waits per task).
std::atomic<uint64_t> g_wait_timeout_ns{10'000'000'000ull};
std::atomic<uint64_t> g_task_timeout_ns{40'000'000'000ull};

std::atomic<uint64_t> g_progress{0};

// Upstream's per-core GlobalContext (sub-block id, DMA workspaces) at args[49]: the sub-block id
// tells a MIX task's two AIV cores of a cluster apart; the simulation has no asynchronous DMA
// engines, so the workspaces stay zero. Kernels read it through pypto_build/mix_kernel.h, whose
// pypto_build::GlobalContext has this layout.
struct GlobalContext {
  int32_t sub_block_id;
  uint64_t dma_workspace[4];
};

// One core of a block: the kernel it runs and its sub-block id. An AIV or AIC task has one core
// per block; a MIX task a cluster of three (the AIC kernel, and the AIV kernels on sub-blocks 0
// and 1), as the device runs a cube:vector = 1:2 kernel.
struct Core {
  const Kernel* kernel;
  int32_t sub_block_id;
};

// Everything the core threads of one task read. Shared ownership: the threads of an abandoned
// task keep it alive after the submitting thread has given up on them.
class TaskLaunch : public PoolJob {
 public:
  // `tensors` are the task's descriptors in argument order (runtime-allocated outputs included).
  TaskLaunch(RankRun* run, const std::vector<Core>& cores, const CoreTaskArgs& args,
             const std::vector<ChipTensor>& tensors)
      : run_(run),
        cores_(cores),
        tensors_(tensors),  // the runtime's copy, as the device payload holds one
        block_num_(args.launch_spec.block_num()),
        blocks_(static_cast<size_t>(block_num_)),
        globals_(cores_.size()),
        args_(static_cast<size_t>(block_num_) * cores_.size()),
        remaining_(thread_count()) {
    for (size_t core = 0; core < cores_.size(); ++core) {
      globals_[core].sub_block_id = cores_[core].sub_block_id;
    }
    for (int32_t block = 0; block < block_num_; ++block) {
      blocks_[static_cast<size_t>(block)] = LocalContext{block, block_num_};
      for (size_t core = 0; core < cores_.size(); ++core) {
        std::array<int64_t, KERNEL_MAX_ARGS>& slots = args_[slot_index(block, core)];
        slots.fill(0);
        for (size_t i = 0; i < tensors_.size(); ++i) {
          slots[i] = reinterpret_cast<int64_t>(&tensors_[i]);
        }
        for (int32_t i = 0; i < args.scalar_count(); ++i) {
          slots[tensors_.size() + static_cast<size_t>(i)] = static_cast<int64_t>(args.scalars[i]);
        }
        slots[SPMD_LOCAL_CONTEXT_INDEX] =
            reinterpret_cast<int64_t>(&blocks_[static_cast<size_t>(block)]);
        slots[SPMD_GLOBAL_CONTEXT_INDEX] = reinterpret_cast<int64_t>(&globals_[core]);
      }
    }
  }

  int32_t thread_count() const { return block_num_ * static_cast<int32_t>(cores_.size()); }

  // Thread `index` runs core index % cores of block index / cores.
  void run(int32_t index) override {
    const int32_t block = index / static_cast<int32_t>(cores_.size());
    const size_t core = static_cast<size_t>(index) % cores_.size();
    const Kernel& kernel = *cores_[core].kernel;
    g_progress.fetch_add(1, std::memory_order_relaxed);
    ThreadContext& context = thread_context();
    context.run = run_;
    context.kernel_name = kernel.name.c_str();
    context.func_id = kernel.func_id;
    context.block_idx = block;
    context.block_num = block_num_;
    prepare_thread_for_crash_reports();
    try {
      kernel.entry(args_[slot_index(block, core)].data());
    } catch (const abi::__forced_unwind&) {
      throw;  // thread cancellation must unwind
    } catch (...) {
      // Escaping the thread would terminate the process; on a device a kernel cannot throw.
      run_->report(PYPTO_SIM_KERNEL_CRASHED,
                   format("kernel '%s' (func_id %d) block %d/%d threw %s", kernel.name.c_str(),
                          kernel.func_id, block, block_num_, current_exception_text().c_str()));
    }
    // Looked up again: a block's fiber may have resumed on another thread (block_pool.cpp).
    thread_context() = ThreadContext{};
    g_progress.fetch_add(1, std::memory_order_relaxed);
    finish_thread();
  }

  // A thread that was never started counts as returned, so the wait below cannot hang on it.
  void finish_thread() {
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mutex_);  // not between the waiter's check and its sleep
      done_.notify_all();
    }
  }

  // How many threads are still running after waiting at most `timeout`. An orchestration on a
  // fiber waits turn by turn with its blocks' fibers; one on a thread of its own yields, then
  // sleeps.
  int32_t wait(std::chrono::nanoseconds timeout) {
    const auto returned = [this] { return remaining_.load(std::memory_order_acquire) == 0; };
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!returned() && switch_turn()) {
      if (std::chrono::steady_clock::now() >= deadline) {
        return remaining_.load(std::memory_order_acquire);
      }
    }
    timeout = std::max(std::chrono::nanoseconds(0),
                       std::chrono::duration_cast<std::chrono::nanoseconds>(
                           deadline - std::chrono::steady_clock::now()));
    if (!spin_until(returned, std::min(timeout, kSpinBudget))) {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait_for(lock, timeout, returned);
    }
    return remaining_.load(std::memory_order_acquire);
  }

 private:
  size_t slot_index(int32_t block, size_t core) const {
    return static_cast<size_t>(block) * cores_.size() + core;
  }

  RankRun* const run_;
  const std::vector<Core> cores_;
  std::vector<ChipTensor> tensors_;
  const int32_t block_num_;
  std::vector<LocalContext> blocks_;
  std::vector<GlobalContext> globals_;
  std::vector<std::array<int64_t, KERNEL_MAX_ARGS>> args_;
  std::mutex mutex_;
  std::condition_variable done_;
  std::atomic<int32_t> remaining_;
};

// The task's name in messages: its (first) kernel's.
std::string task_name(const std::vector<Core>& cores) {
  const Kernel& kernel = *cores.front().kernel;
  return format("kernel '%s' (func_id %d)", kernel.name.c_str(), kernel.func_id);
}

void run_task(RankRun& run, const std::vector<Core>& cores, const CoreTaskArgs& args,
              const std::vector<ChipTensor>& tensors) {
  auto launch = std::make_shared<TaskLaunch>(&run, cores, args, tensors);
  const int32_t thread_count = launch->thread_count();
  const int32_t block_num = args.launch_spec.block_num();
  for (int32_t index = 0; index < thread_count; ++index) {
    try {
      start_pooled(launch, index);
    } catch (const std::system_error& error) {
      run.report(SIMPLER_ERROR_SCHEDULER_TIMEOUT,
                 format("%s: could not start a core of block %d of %d: %s",
                        task_name(cores).c_str(), index / static_cast<int32_t>(cores.size()),
                        block_num, error.what()));
      launch->finish_thread();
    }
  }
  const uint64_t budget_ns = g_task_timeout_ns.load(std::memory_order_relaxed);
  const int32_t running = launch->wait(std::chrono::nanoseconds(budget_ns));
  if (running == 0) {
    return;
  }
  // A thread is a block, unless a block is a MIX cluster of cores.
  const char* unit = cores.size() == 1 ? "blocks" : "cores";
  run.report(SIMPLER_ERROR_SCHEDULER_TIMEOUT,
             format("%s: %d of %d %s did not return within %.1f s; they were abandoned",
                    task_name(cores).c_str(), running, thread_count, unit,
                    static_cast<double>(budget_ns) / 1e9));
  // Their pool threads rejoin the pool if their kernels ever return.
  run.abandon();
}

// The current rank's run, or null (with a note on stderr) when called outside one.
RankRun* current_run(const char* function) {
  RankRun* run = thread_context().run;
  if (run == nullptr) {
    std::fprintf(stderr, "pypto-build sim: %s called outside a simulated run; ignored\n",
                 function);
  }
  return run;
}

}  // namespace

uint64_t wait_timeout_ns() { return g_wait_timeout_ns.load(std::memory_order_relaxed); }

void set_timeouts(uint64_t wait_ns, uint64_t task_ns) {
  g_wait_timeout_ns.store(wait_ns, std::memory_order_relaxed);
  g_task_timeout_ns.store(task_ns, std::memory_order_relaxed);
}

uint64_t progress() { return g_progress.load(std::memory_order_relaxed); }

namespace {

// The task's descriptors in argument order: existing tensors as given, and a fresh runtime
// allocation for each TensorCreateInfo output, which is also appended to `outputs`.
bool materialize(RankRun& run, const CoreTaskArgs& args, std::vector<ChipTensor>* tensors,
                 TaskOutputTensors* outputs) {
  tensors->clear();
  for (int32_t i = 0; i < args.tensor_count(); ++i) {
    if (args.tags[i] != TensorArgType::OUTPUT) {
      tensors->push_back(*static_cast<const ChipTensor*>(args.tensors[i]));
      continue;
    }
    const auto& info = *static_cast<const TensorCreateInfo*>(args.tensors[i]);
    tensors->push_back(run.create_tensor(info.dtype, info.shapes, info.ndims));
    if (run.failed()) {
      return false;
    }
    outputs->append(tensors->back());
  }
  return true;
}

// The kernel of `func_id`, which must be a `core_type` kernel; null after reporting why not.
const Kernel* find_kernel(RankRun& run, int32_t func_id, CoreType core_type) {
  const Kernel* kernel = run.callable->kernel(func_id);
  if (kernel == nullptr) {
    run.report(SIMPLER_ERROR_INVALID_ARGS,
               format("no kernel with func_id %d in this callable's kernel_config.py", func_id));
    return nullptr;
  }
  if (kernel->core_type != core_type) {
    run.report(SIMPLER_ERROR_INVALID_ARGS,
               format("kernel '%s' (func_id %d) is an %s kernel, submitted as %s",
                      kernel->name.c_str(), func_id, core_type_name(kernel->core_type),
                      core_type_name(core_type)));
    return nullptr;
  }
  return kernel;
}

// The cores of each block of a task: one AIV or one AIC kernel, or a MIX cluster (an AIC kernel
// and an AIV kernel on each of the two sub-blocks). Empty after reporting a bad combination.
std::vector<Core> task_cores(RankRun& run, const MixedKernels& kernels, CoreType* limit_type) {
  const bool aic = kernels.aic_kernel_id != INVALID_KERNEL_ID;
  const bool aiv0 = kernels.aiv0_kernel_id != INVALID_KERNEL_ID;
  const bool aiv1 = kernels.aiv1_kernel_id != INVALID_KERNEL_ID;
  const bool single = (aic + aiv0 + aiv1) == 1;
  if (!single && !(aic && aiv0 && aiv1)) {
    run.report(SIMPLER_ERROR_INVALID_ARGS,
               format("task kernels aic=%d aiv0=%d aiv1=%d: the simulator runs one AIV or one "
                      "AIC kernel per task, or a MIX cluster of all three",
                      kernels.aic_kernel_id, kernels.aiv0_kernel_id, kernels.aiv1_kernel_id));
    return {};
  }
  std::vector<Core> cores;
  const auto add = [&](int32_t func_id, CoreType core_type, int32_t sub_block_id) {
    const Kernel* kernel = find_kernel(run, func_id, core_type);
    if (kernel != nullptr) {
      cores.push_back(Core{kernel, sub_block_id});
    }
    return kernel != nullptr;
  };
  // A task with an AIC kernel is bounded by the cluster count, an AIV-only one by the AIVs.
  *limit_type = aic ? CoreType::AIC : CoreType::AIV;
  if (aic && !add(kernels.aic_kernel_id, CoreType::AIC, 0)) {
    return {};
  }
  if (aiv0 && !add(kernels.aiv0_kernel_id, CoreType::AIV, 0)) {
    return {};
  }
  if (aiv1 && !add(kernels.aiv1_kernel_id, CoreType::AIV, single ? 0 : 1)) {
    return {};
  }
  return cores;
}

}  // namespace

void submit_task(const MixedKernels& kernels, const CoreTaskArgs& args,
                 TaskOutputTensors* outputs) {
  RankRun* run = current_run("rt_submit_task");
  if (run == nullptr || run->failed()) {
    return;  // after a fatal error the rank's later submissions are dropped
  }
  if (args.has_error) {
    const int32_t func_id = kernels.aic_kernel_id != INVALID_KERNEL_ID ? kernels.aic_kernel_id
                                                                       : kernels.aiv0_kernel_id;
    run->report(SIMPLER_ERROR_INVALID_ARGS,
                format("invalid task arguments for func_id %d: %s", func_id,
                       args.error_msg != nullptr ? args.error_msg : "(no message)"));
    return;
  }
  CoreType limit_type = CoreType::AIV;
  const std::vector<Core> cores = task_cores(*run, kernels, &limit_type);
  if (cores.empty()) {
    return;
  }
  const int32_t block_num = args.launch_spec.block_num();
  if (block_num < 1) {
    run->report(SIMPLER_ERROR_INVALID_ARGS, format("%s: block_num must be >= 1, got %d",
                                                   task_name(cores).c_str(), block_num));
    return;
  }
  const int32_t limit = run->sync_start_limit(limit_type);
  if (args.launch_spec.require_sync_start() && block_num > 1 && block_num > limit) {
    // Its blocks could never all be resident at once: a guaranteed deadlock.
    run->report(SIMPLER_ERROR_REQUIRE_SYNC_START_INVALID,
                format("require_sync_start block_num=%d > limit=%d (deadlock guaranteed)", block_num,
                       limit));
    return;
  }
  std::vector<ChipTensor> tensors;
  if (!materialize(*run, args, &tensors, outputs)) {
    return;
  }
  PTO2TaskId id = PTO2TaskId::invalid();
  if (!run->order.add(task_name(cores), args, &tensors, *run, &id)) {
    return;
  }
  outputs->set_task_id(id);
  run->count_task();
  run_task(*run, cores, args, tensors);
}

void alloc_tensors(const CoreTaskArgs& args, TaskOutputTensors* outputs) {
  RankRun* run = current_run("alloc_tensors");
  if (run == nullptr || run->failed()) {
    return;
  }
  std::vector<ChipTensor> tensors;
  materialize(*run, args, &tensors, outputs);
}

}  // namespace pypto_sim

extern "C" {

void pypto_sim_rt_submit(const MixedKernels* kernels, const CoreTaskArgs* args,
                         TaskOutputTensors* outputs) {
  pypto_sim::submit_task(*kernels, *args, outputs);
}

void pypto_sim_rt_alloc(const CoreTaskArgs* args, TaskOutputTensors* outputs) {
  pypto_sim::alloc_tensors(*args, outputs);
}

bool pypto_sim_rt_is_fatal(void) {
  const pypto_sim::RankRun* run = pypto_sim::thread_context().run;
  return run != nullptr && run->failed();
}

void pypto_sim_rt_report_fatal(int32_t code, const char* function, const char* format_text,
                               ...) {
  (void)function;
  va_list values;
  va_start(values, format_text);
  const std::string message = pypto_sim::vformat(format_text, values);
  va_end(values);
  pypto_sim::RankRun* run = pypto_sim::current_run("rt_report_fatal");
  if (run != nullptr) {
    run->report(code, message);
  }
}

void pypto_sim_rt_log(int32_t level, const char* function, const char* format_text, ...) {
  (void)function;
  static const char* const kLevels[] = {"ERROR: ", "WARN: ", "", "INFO: ", "DEBUG: "};
  va_list values;
  va_start(values, format_text);
  const std::string line = pypto_sim::vformat(format_text, values);
  va_end(values);
  pypto_sim::RankRun* run = pypto_sim::current_run("LOG_*");
  if (run != nullptr) {
    run->log((level >= 0 && level <= 4 ? kLevels[level] : "") + line);
  }
}

void pypto_sim_rt_scope_begin(int32_t manual) {
  pypto_sim::RankRun* run = pypto_sim::current_run("rt_scope_begin");
  if (run != nullptr && !run->failed()) {
    run->order.begin_scope(manual != 0, *run);
  }
}

void pypto_sim_rt_scope_end(void) {
  pypto_sim::RankRun* run = pypto_sim::current_run("rt_scope_end");
  if (run != nullptr && !run->failed()) {
    run->order.end_scope();
  }
}

int32_t pypto_sim_rt_available_cluster_count(void) {
  const pypto_sim::RankRun* run = pypto_sim::thread_context().run;
  return run == nullptr ? 0 : run->sync_start_limit(pypto_sim::CoreType::AIC);
}

int32_t pypto_sim_rt_available_aiv_count(void) {
  const pypto_sim::RankRun* run = pypto_sim::thread_context().run;
  return run == nullptr ? 0 : run->sync_start_limit(pypto_sim::CoreType::AIV);
}

void pypto_sim_report_error(int32_t code, const char* message) {
  const pypto_sim::ThreadContext& context = pypto_sim::thread_context();
  if (context.run == nullptr) {
    std::fprintf(stderr, "pypto-build sim: kernel error %d outside a simulated run: %s\n", code,
                 message);
    return;
  }
  if (context.kernel_name == nullptr) {  // an orchestration thread, not a block
    context.run->report(code, message);
    return;
  }
  context.run->report(code, pypto_sim::format("kernel '%s' (func_id %d) block %d/%d: %s",
                                              context.kernel_name, context.func_id,
                                              context.block_idx, context.block_num, message));
}

uint64_t pypto_sim_wait_timeout_ns(void) { return pypto_sim::wait_timeout_ns(); }

}  // extern "C"
