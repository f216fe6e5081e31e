// api.cpp -- the C interface of sim_runtime.h: comm domains, loaded callables, runs.

#include <cxxabi.h>
#include <dlfcn.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <new>
#include <system_error>

#include "sim_internal.h"
#include "sim_runtime.h"

namespace {

using pypto_sim::RankRun;

constexpr uint64_t kWindowAlignment = 64;

void write_error(char* error, size_t error_len, const std::string& message) {
  if (error == nullptr || error_len == 0) {
    return;
  }
  const size_t length = message.size() < error_len - 1 ? message.size() : error_len - 1;
  std::memcpy(error, message.data(), length);
  error[length] = '\0';
}

std::string last_dl_error() {
  const char* text = dlerror();
  return text != nullptr ? text : "unknown dynamic loader error";
}

int32_t status_of(const RankRun& run) {
  const int32_t code = run.code();
  return code <= 0 ? code : -code;
}

// A rank's orchestration, run on a fiber of the block pool beside its tasks' blocks: waiting
// for a task is then a fiber's turn, not a sleep and a wake-up of the rank's thread, which waits
// for the whole orchestration instead.
class OrchestrationJob : public pypto_sim::PoolJob {
 public:
  OrchestrationJob(RankRun& run, const pypto_sim::Callable& callable, const ChipTaskArgs& args)
      : run_(run), callable_(callable), args_(args) {}

  void run(int32_t) override {
    pypto_sim::ThreadContext& context = pypto_sim::thread_context();
    context = pypto_sim::ThreadContext{};
    context.run = &run_;
    pypto_sim::prepare_thread_for_crash_reports();
    execute();
    pypto_sim::thread_context() = pypto_sim::ThreadContext{};
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    finished_.notify_all();
  }

  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [this] { return done_; });
  }

 private:
  void execute() {
    const int32_t given = args_.tensor_count() + args_.scalar_count();
    if (callable_.config != nullptr) {
      const int expected = callable_.config(args_).expected_arg_count;
      if (given < expected) {
        run_.refuse(pypto_sim::format(
            "the orchestration expects %d arguments (aicpu_orchestration_config), got %d "
            "(%d tensors, %d scalars)",
            expected, given, args_.tensor_count(), args_.scalar_count()));
        return;
      }
    }
    try {
      callable_.entry(args_);
    } catch (const abi::__forced_unwind&) {
      throw;
    } catch (...) {
      // Escaping into the caller (ctypes) would terminate the process.
      run_.report(PYPTO_SIM_KERNEL_CRASHED,
                  "the orchestration threw " + pypto_sim::current_exception_text());
    }
  }

  RankRun& run_;
  const pypto_sim::Callable& callable_;
  const ChipTaskArgs args_;
  std::mutex mutex_;
  std::condition_variable finished_;
  bool done_ = false;
};

}  // namespace

namespace pypto_sim {

const Kernel* Callable::kernel(int32_t func_id) const {
  for (const Kernel& candidate : kernels) {
    if (candidate.func_id == func_id) {
      return &candidate;
    }
  }
  return nullptr;
}

Callable::~Callable() {
  for (Kernel& kernel : kernels) {
    if (kernel.handle != nullptr) {
      dlclose(kernel.handle);
    }
  }
  if (handle != nullptr) {
    dlclose(handle);
  }
}

}  // namespace pypto_sim

using pypto_sim::Callable;
using pypto_sim::CoreType;
using pypto_sim::Domain;
using pypto_sim::Kernel;

int32_t pypto_sim_api_version(void) { return PYPTO_SIM_API_VERSION; }

uint64_t pypto_sim_abi_size(int32_t which) {
  switch (which) {
    case PYPTO_SIM_ABI_CHIP_TENSOR:
      return sizeof(ChipTensor);
    case PYPTO_SIM_ABI_COMM_CONTEXT:
      return sizeof(CommContext);
    case PYPTO_SIM_ABI_LOCAL_CONTEXT:
      return sizeof(LocalContext);
    case PYPTO_SIM_ABI_CHIP_TASK_ARGS:
      return sizeof(ChipTaskArgs);
    default:
      return 0;
  }
}

void pypto_sim_set_timeouts(uint64_t wait_ns, uint64_t task_ns) {
  pypto_sim::set_timeouts(wait_ns, task_ns);
}

uint64_t pypto_sim_progress(void) { return pypto_sim::progress(); }

uint32_t pypto_sim_pool_threads(uint32_t* idle) {
  const pypto_sim::PoolCounts counts = pypto_sim::pool_counts();
  *idle = counts.idle;
  return counts.threads;
}

void pypto_sim_describe_tensor(void* out, uint64_t addr, uint64_t nbytes, uint64_t start_offset,
                               uint8_t dtype, uint32_t ndims, const uint32_t* shapes,
                               const uint32_t* strides) {
  pypto_sim::describe(static_cast<ChipTensor*>(out), addr, nbytes, start_offset,
                      static_cast<DataType>(dtype), ndims, shapes, strides);
}

void* pypto_sim_domain_create(uint32_t nranks, uint64_t window_bytes, const uint64_t* windows,
                              char* error, size_t error_len) {
  if (nranks < 1 || nranks > COMM_MAX_RANK_NUM) {
    write_error(error, error_len,
                pypto_sim::format("a comm domain has 1 to %u ranks, got %u",
                                  static_cast<unsigned>(COMM_MAX_RANK_NUM),
                                  static_cast<unsigned>(nranks)));
    return nullptr;
  }
  if (window_bytes == 0 || window_bytes % kWindowAlignment != 0) {
    write_error(error, error_len,
                pypto_sim::format("a window is a positive whole number of %llu-byte cache lines, "
                                  "got %llu bytes",
                                  static_cast<unsigned long long>(kWindowAlignment),
                                  static_cast<unsigned long long>(window_bytes)));
    return nullptr;
  }
  auto domain = std::make_unique<Domain>();
  domain->window_bytes = window_bytes;
  for (uint32_t rank = 0; rank < nranks; ++rank) {
    if (windows[rank] == 0 || windows[rank] % kWindowAlignment != 0) {
      write_error(error, error_len,
                  pypto_sim::format("the window of rank %u at 0x%llx is not aligned to %llu bytes",
                                    static_cast<unsigned>(rank),
                                    static_cast<unsigned long long>(windows[rank]),
                                    static_cast<unsigned long long>(kWindowAlignment)));
      return nullptr;
    }
    domain->windows.push_back(reinterpret_cast<void*>(windows[rank]));
  }
  domain->contexts.resize(nranks);
  for (uint32_t rank = 0; rank < nranks; ++rank) {
    CommContext& context = domain->contexts[rank];
    context = CommContext{};
    context.rankId = rank;
    context.rankNum = nranks;
    context.winSize = window_bytes;
    for (uint32_t peer = 0; peer < nranks; ++peer) {
      const uint64_t base = reinterpret_cast<uint64_t>(domain->windows[peer]);
      context.windowsIn[peer] = base;
      context.windowsOut[peer] = base;
    }
  }
  return domain.release();
}

uint64_t pypto_sim_domain_window_bytes(const void* domain) {
  return static_cast<const Domain*>(domain)->window_bytes;
}

uint64_t pypto_sim_domain_window(const void* domain, uint32_t rank) {
  return reinterpret_cast<uint64_t>(static_cast<const Domain*>(domain)->windows.at(rank));
}

uint64_t pypto_sim_domain_context(const void* domain, uint32_t rank) {
  return reinterpret_cast<uint64_t>(&static_cast<const Domain*>(domain)->contexts.at(rank));
}

void pypto_sim_domain_destroy(void* domain) { delete static_cast<Domain*>(domain); }

void* pypto_sim_callable_load(const char* orchestration_path, const char* entry_name,
                              int32_t kernel_count, const int32_t* func_ids,
                              const int32_t* core_types, const char* const* kernel_names,
                              const char* const* kernel_paths, char* error, size_t error_len) {
  auto callable = std::make_unique<Callable>();
  // RTLD_LOCAL: every sub-build defines aicpu_orchestration_entry and every kernel
  // kernel_entry; each is looked up in its own object only.
  callable->handle = dlopen(orchestration_path, RTLD_NOW | RTLD_LOCAL);
  if (callable->handle == nullptr) {
    write_error(error, error_len, "cannot load orchestration: " + last_dl_error());
    return nullptr;
  }
  callable->entry =
      reinterpret_cast<pypto_sim::OrchestrationEntry>(dlsym(callable->handle, entry_name));
  if (callable->entry == nullptr) {
    write_error(error, error_len,
                pypto_sim::format("orchestration %s does not export %s", orchestration_path,
                                  entry_name));
    return nullptr;
  }
  callable->config = reinterpret_cast<pypto_sim::OrchestrationConfigFn>(
      dlsym(callable->handle, "aicpu_orchestration_config"));
  for (int32_t i = 0; i < kernel_count; ++i) {
    if (callable->kernel(func_ids[i]) != nullptr) {
      write_error(error, error_len, pypto_sim::format("func_id %d is listed twice", func_ids[i]));
      return nullptr;
    }
    Kernel kernel{func_ids[i], static_cast<CoreType>(core_types[i]), kernel_names[i], nullptr,
                  nullptr};
    kernel.handle = dlopen(kernel_paths[i], RTLD_NOW | RTLD_LOCAL);
    if (kernel.handle == nullptr) {
      write_error(error, error_len,
                  "cannot load kernel '" + kernel.name + "': " + last_dl_error());
      return nullptr;
    }
    kernel.entry = reinterpret_cast<pypto_sim::KernelEntry>(dlsym(kernel.handle, "kernel_entry"));
    callable->kernels.push_back(kernel);
    if (kernel.entry == nullptr) {
      write_error(error, error_len,
                  pypto_sim::format("kernel '%s' (%s) does not export kernel_entry",
                                    kernel.name.c_str(), kernel_paths[i]));
      return nullptr;
    }
  }
  return callable.release();
}

void pypto_sim_callable_unload(void* callable) { delete static_cast<Callable*>(callable); }

void* pypto_sim_run_create(int32_t rank, const char* next_level, int32_t aiv_capacity,
                           int32_t aic_capacity) {
  try {
    return new RankRun(rank, next_level != nullptr ? next_level : "", aiv_capacity,
                       aic_capacity);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

int32_t pypto_sim_run_execute(void* run_handle, const void* callable_handle,
                              void* const* tensors, int32_t tensor_count,
                              const uint64_t* scalars, int32_t scalar_count) {
  RankRun& run = *static_cast<RankRun*>(run_handle);
  const Callable& callable = *static_cast<const Callable*>(callable_handle);
  if (tensor_count < 0 || tensor_count > MAX_TENSOR_ARGS || scalar_count < 0 ||
      scalar_count > MAX_SCALAR_ARGS) {
    run.refuse(pypto_sim::format(
        "an orchestration takes at most %d tensors and %d scalars, got %d and %d",
        MAX_TENSOR_ARGS, MAX_SCALAR_ARGS, tensor_count, scalar_count));
    return status_of(run);
  }
  ChipTaskArgs args{};
  for (int32_t i = 0; i < tensor_count; ++i) {
    args.tensors[i] = TensorRef(static_cast<const ChipTensor*>(tensors[i]));
  }
  for (int32_t i = 0; i < scalar_count; ++i) {
    args.scalars[i] = scalars[i];
  }
  args.tensor_count_ = tensor_count;
  args.scalar_count_ = scalar_count;
  run.callable = &callable;
  auto job = std::make_shared<OrchestrationJob>(run, callable, args);
  try {
    pypto_sim::start_pooled(job, 0);
  } catch (const std::system_error&) {
    job->run(0);  // no fiber to be had: on this thread, as a thread of its own would
  }
  job->wait();
  return status_of(run);
}

int32_t pypto_sim_run_code(const void* run) { return static_cast<const RankRun*>(run)->code(); }

const char* pypto_sim_run_message(const void* run) {
  return static_cast<const RankRun*>(run)->message();
}

int32_t pypto_sim_run_task_count(const void* run) {
  return static_cast<const RankRun*>(run)->task_count();
}

int32_t pypto_sim_run_log_count(const void* run) {
  return static_cast<const RankRun*>(run)->log_count();
}

const char* pypto_sim_run_log_line(const void* run, int32_t index) {
  return static_cast<const RankRun*>(run)->log_line(index);
}

int32_t pypto_sim_run_abandoned(const void* run) {
  return static_cast<const RankRun*>(run)->abandoned() ? 1 : 0;
}

void pypto_sim_run_destroy(void* run) {
  RankRun* rank_run = static_cast<RankRun*>(run);
  if (!rank_run->abandoned()) {
    delete rank_run;
  }
  // An abandoned run is left allocated on purpose: its block threads may still report into it.
}
