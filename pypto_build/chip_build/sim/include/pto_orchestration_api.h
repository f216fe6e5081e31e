// pto_orchestration_api.h -- the simulator's implementation of PyPTO's orchestration API.
//
// A CHIP orchestration source is written against PyPTO's runtime (simpler): it includes
// "pto_orchestration_api.h" and uses the names of that API at simpler 6ebaf77
// (docs/runtime-compatibility.md): ChipTaskArgs with tensor(i).ref() and scalar(i), CoreTaskArgs
// with add_input / add_output / add_inout / add_scalar and a launch_spec, TensorCreateInfo with
// alloc_tensors, rt_submit_aiv_task / rt_submit_aic_task / rt_submit_task, rt_report_fatal, the
// LOG_* macros, PTO2OrchestrationConfig and the PTO2_ERROR_* codes, PTO2TaskId with
// set_dependencies and TaskOutputTensors::task_id for explicit task dependencies, and
// rt_scope_begin / rt_scope_end. PyPTO's runtime compiles such a source against its own header; the
// host simulator compiles the same source against this one, which declares the same names with the
// same call shapes, so one source serves both.
//
// Only the source interface is shared, not the binary one: the containers below are plain data
// that the simulation runtime fills and reads, and the runtime calls go to C functions the
// simulation runtime defines (pypto_sim_rt_*), which an orchestration shared object leaves
// undefined until the runtime loads it. That is why the simulator's binaries live apart from
// the binaries PyPTO's runtime builds for its own platforms.

#ifndef PYPTO_BUILD_SIM_PTO_ORCHESTRATION_API_H_
#define PYPTO_BUILD_SIM_PTO_ORCHESTRATION_API_H_

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "pypto_build/kernel_abi.h"

// Error codes under the names of the reference revision (the numbers never changed).
constexpr int32_t PTO2_ERROR_INVALID_ARGS = SIMPLER_ERROR_INVALID_ARGS;
constexpr int32_t PTO2_ERROR_REQUIRE_SYNC_START_INVALID = SIMPLER_ERROR_REQUIRE_SYNC_START_INVALID;
constexpr int32_t PTO2_ERROR_EXPLICIT_ORCH_FATAL = 9;

constexpr uint32_t MAX_TENSOR_DIMS = RUNTIME_MAX_TENSOR_DIMS;
constexpr int32_t INVALID_KERNEL_ID = -1;

// A submitted task's id (simpler's pto_task_id.h): ring and local id in one 64-bit word.
struct PTO2TaskId {
  uint64_t raw;

  static constexpr PTO2TaskId make(uint8_t ring_id, uint32_t local_id) {
    return PTO2TaskId{(static_cast<uint64_t>(ring_id) << 32) | static_cast<uint64_t>(local_id)};
  }
  static constexpr PTO2TaskId invalid() { return PTO2TaskId{UINT64_MAX}; }
  constexpr uint8_t ring() const { return static_cast<uint8_t>(raw >> 32); }
  constexpr uint32_t local() const { return static_cast<uint32_t>(raw & 0xFFFFFFFFu); }
  constexpr bool is_valid() const { return raw != UINT64_MAX; }
  constexpr bool is_invalid() const { return raw == UINT64_MAX; }
  constexpr bool operator==(const PTO2TaskId& other) const { return raw == other.raw; }
  constexpr bool operator!=(const PTO2TaskId& other) const { return raw != other.raw; }
};

// How a task uses a tensor argument; the runtime derives its dependency edges from it.
enum class TensorArgType : int32_t {
  INPUT = 0,
  OUTPUT = 1,  // a fresh tensor the runtime allocates (TensorCreateInfo)
  INOUT = 2,
  OUTPUT_EXISTING = 3,  // an existing tensor the task overwrites without reading
  NO_DEP = 4,
};

// One tensor argument of the orchestration entry; ref() is its descriptor.
class TensorRef {
 public:
  TensorRef() = default;
  explicit TensorRef(const ChipTensor* tensor) : tensor_(tensor) {}
  const ChipTensor& ref() const { return *tensor_; }

 private:
  const ChipTensor* tensor_ = nullptr;
};

// What the runtime hands the orchestration entry: tensors first, then raw 64-bit scalars.
struct ChipTaskArgs {
  TensorRef tensors[MAX_TENSOR_ARGS];
  uint64_t scalars[MAX_SCALAR_ARGS];
  int32_t tensor_count_ = 0;
  int32_t scalar_count_ = 0;

  const TensorRef& tensor(int32_t i) const { return tensors[i]; }
  uint64_t scalar(int32_t i) const { return scalars[i]; }
  int32_t tensor_count() const { return tensor_count_; }
  int32_t scalar_count() const { return scalar_count_; }
};

// A tensor the runtime allocates for an orchestration (packed row-major, zero-filled).
class TensorCreateInfo {
 public:
  TensorCreateInfo(const uint32_t shapes_in[], uint32_t ndims_in,
                   DataType dtype_in = DataType::FLOAT32)
      : ndims(ndims_in), dtype(dtype_in) {
    for (uint32_t dim = 0; dim < ndims_in && dim < MAX_TENSOR_DIMS; ++dim) {
      shapes[dim] = shapes_in[dim];
    }
  }

  uint32_t ndims;
  DataType dtype;
  uint32_t shapes[MAX_TENSOR_DIMS] = {};
};

// Launch width and start policy of a task. Chips name the width setter differently (a2a3:
// set_block_num, a5: set_core_num); both set the same width.
class PTO2LaunchSpec {
 public:
  int16_t block_num() const { return block_num_; }
  void set_block_num(int16_t blocks) { block_num_ = blocks; }
  void set_core_num(int16_t cores) { block_num_ = cores; }
  bool require_sync_start() const { return require_sync_start_; }
  void set_require_sync_start(bool sync_start) { require_sync_start_ = sync_start; }

 private:
  int16_t block_num_ = 1;
  bool require_sync_start_ = false;
};

// The arguments of one task. Like the runtime's, it stores pointers to the descriptors (so the
// add_* calls take lvalues only: a temporary would dangle), requires tensors before scalars, and latches the
// first construction error for the runtime to report at submit.
struct CoreTaskArgs {
  const void* tensors[MAX_TENSOR_ARGS] = {};  // ChipTensor*, or TensorCreateInfo* for OUTPUT
  TensorArgType tags[MAX_TENSOR_ARGS] = {};
  uint64_t scalars[MAX_SCALAR_ARGS] = {};
  int32_t tensor_count_ = 0;
  int32_t scalar_count_ = 0;
  bool has_error = false;
  const char* error_msg = nullptr;
  PTO2LaunchSpec launch_spec;
  // The tasks this one must follow besides those the TensorMap finds (caller-owned array).
  const PTO2TaskId* explicit_deps_ = nullptr;
  uint32_t explicit_dep_count_ = 0;

  // As the runtime's: (ptr, count) is stored, not copied; count 0 clears; a second non-empty
  // call, or a null array with a count, is a construction error.
  void set_dependencies(const PTO2TaskId* deps, uint32_t count) {
    if (count == 0) {
      explicit_deps_ = nullptr;
      explicit_dep_count_ = 0;
      return;
    }
    if (deps == nullptr) {
      set_error("set_dependencies: deps must not be null when count > 0");
      return;
    }
    if (explicit_deps_ != nullptr) {
      set_error("set_dependencies: may be called at most once per Arg");
      return;
    }
    explicit_deps_ = deps;
    explicit_dep_count_ = count;
  }
  uint32_t explicit_dep_count() const { return explicit_dep_count_; }
  PTO2TaskId explicit_dep(uint32_t index) const { return explicit_deps_[index]; }

  template <typename... Tensors>
  void add_input(Tensors&... tensors) {
    add_tensors(TensorArgType::INPUT, tensors...);
  }
  template <typename... Tensors>
  void add_inout(Tensors&... tensors) {
    add_tensors(TensorArgType::INOUT, tensors...);
  }
  template <typename... Tensors>
  void add_no_dep(Tensors&... tensors) {
    add_tensors(TensorArgType::NO_DEP, tensors...);
  }
  // Existing tensors the task overwrites, or create-infos of tensors the runtime allocates.
  template <typename... Tensors>
  void add_output(Tensors&... tensors) {
    constexpr bool created = (std::is_same_v<std::decay_t<Tensors>, TensorCreateInfo> && ...);
    add_tensors(created ? TensorArgType::OUTPUT : TensorArgType::OUTPUT_EXISTING, tensors...);
  }

  // Scalars, each as its 64-bit pattern (integers widened, floating-point values bit-cast).
  template <typename... Values>
  void add_scalar(Values... values) {
    static_assert(sizeof...(Values) >= 1, "add_scalar needs a value");
    (add_scalar_one(values), ...);
  }

  int32_t tensor_count() const { return tensor_count_; }
  int32_t scalar_count() const { return scalar_count_; }

  void set_error(const char* message) {
    if (!has_error) {
      has_error = true;
      error_msg = message;
    }
  }

 private:
  template <typename... Tensors>
  void add_tensors(TensorArgType tag, Tensors&... tensors) {
    static_assert(((std::is_same_v<std::decay_t<Tensors>, ChipTensor> ||
                    std::is_same_v<std::decay_t<Tensors>, TensorCreateInfo>) &&
                   ...),
                  "task tensors are ChipTensor (or TensorCreateInfo) lvalues");
    (add_tensor_one(tag, &tensors), ...);
  }

  void add_tensor_one(TensorArgType tag, const void* tensor) {
    if (scalar_count_ > 0) {
      set_error("a tensor argument was added after a scalar");
    } else if (tensor_count_ == MAX_TENSOR_ARGS) {
      set_error("too many tensor arguments");
    } else {
      tensors[tensor_count_] = tensor;
      tags[tensor_count_] = tag;
      ++tensor_count_;
    }
  }

  template <typename T>
  void add_scalar_one(T value) {
    static_assert(std::is_arithmetic_v<T> || std::is_enum_v<T>, "scalars are numbers");
    uint64_t bits = 0;
    if constexpr (std::is_floating_point_v<T>) {
      std::memcpy(&bits, &value, sizeof(T));
    } else {
      bits = static_cast<uint64_t>(static_cast<int64_t>(value));
    }
    if (scalar_count_ == MAX_SCALAR_ARGS) {
      set_error("too many scalar arguments");
    } else {
      scalars[scalar_count_++] = bits;
    }
  }
};

// Which kernels a task runs: an AIC kernel, up to two AIV kernels, or all three (MIX).
struct MixedKernels {
  int32_t aic_kernel_id = INVALID_KERNEL_ID;
  int32_t aiv0_kernel_id = INVALID_KERNEL_ID;
  int32_t aiv1_kernel_id = INVALID_KERNEL_ID;
};

// The tensors a submission allocated (TensorCreateInfo outputs), in argument order, and the
// submitted task's id (invalid when nothing was submitted).
class TaskOutputTensors {
 public:
  bool empty() const { return count_ == 0; }
  PTO2TaskId task_id() const { return task_id_; }
  void set_task_id(PTO2TaskId id) { task_id_ = id; }
  uint32_t size() const { return count_; }
  const ChipTensor& get_ref(uint32_t index) const& { return tensors_[index]; }
  const ChipTensor& get_ref(uint32_t index) const&& = delete;

  // Runtime side: append one allocated tensor.
  void append(const ChipTensor& tensor) {
    if (count_ < static_cast<uint32_t>(MAX_TENSOR_ARGS)) {
      tensors_[count_++] = tensor;
    }
  }

 private:
  PTO2TaskId task_id_ = PTO2TaskId::invalid();
  uint32_t count_ = 0;
  ChipTensor tensors_[MAX_TENSOR_ARGS];
};

// Returned by aicpu_orchestration_config: the runtime refuses a run with fewer arguments.
struct PTO2OrchestrationConfig {
  int expected_arg_count;
};

// How a scope orders its tasks: AUTO through the TensorMap, MANUAL by explicit dependencies only.
enum class PTO2ScopeMode : uint8_t { AUTO = 0, MANUAL = 1 };

// The simulation runtime's side (defined by the simulation runtime library).
extern "C" {
void pypto_sim_rt_submit(const MixedKernels* kernels, const CoreTaskArgs* args,
                         TaskOutputTensors* outputs);
void pypto_sim_rt_alloc(const CoreTaskArgs* args, TaskOutputTensors* outputs);
bool pypto_sim_rt_is_fatal(void);
void pypto_sim_rt_report_fatal(int32_t code, const char* function, const char* format, ...)
    __attribute__((format(printf, 3, 4)));
// level: 0 error, 1 warn, 2 timing, 3 info, 4 debug.
void pypto_sim_rt_log(int32_t level, const char* function, const char* format, ...)
    __attribute__((format(printf, 3, 4)));
int32_t pypto_sim_rt_available_cluster_count(void);
int32_t pypto_sim_rt_available_aiv_count(void);
void pypto_sim_rt_scope_begin(int32_t manual);
void pypto_sim_rt_scope_end(void);
}

inline TaskOutputTensors rt_submit_task(const MixedKernels& kernels, const CoreTaskArgs& args) {
  TaskOutputTensors outputs;
  pypto_sim_rt_submit(&kernels, &args, &outputs);
  return outputs;
}

inline TaskOutputTensors rt_submit_aiv_task(int32_t kernel_id, const CoreTaskArgs& args) {
  MixedKernels kernels;
  kernels.aiv0_kernel_id = kernel_id;
  return rt_submit_task(kernels, args);
}

inline TaskOutputTensors rt_submit_aic_task(int32_t kernel_id, const CoreTaskArgs& args) {
  MixedKernels kernels;
  kernels.aic_kernel_id = kernel_id;
  return rt_submit_task(kernels, args);
}

inline TaskOutputTensors alloc_tensors(const CoreTaskArgs& args) {
  TaskOutputTensors outputs;
  pypto_sim_rt_alloc(&args, &outputs);
  return outputs;
}

template <typename... CreateInfos>
inline TaskOutputTensors alloc_tensors(const CreateInfos&... infos) {
  static_assert((std::is_same_v<CreateInfos, TensorCreateInfo> && ...),
                "alloc_tensors takes TensorCreateInfo arguments");
  CoreTaskArgs args;
  args.add_output(infos...);
  return alloc_tensors(args);
}

inline bool rt_is_fatal() { return pypto_sim_rt_is_fatal(); }
inline int32_t rt_available_cluster_count() { return pypto_sim_rt_available_cluster_count(); }
inline int32_t rt_available_aiv_count() { return pypto_sim_rt_available_aiv_count(); }
inline void rt_scope_begin(PTO2ScopeMode mode = PTO2ScopeMode::AUTO) {
  pypto_sim_rt_scope_begin(mode == PTO2ScopeMode::MANUAL ? 1 : 0);
}
inline void rt_scope_end() { pypto_sim_rt_scope_end(); }

#define rt_report_fatal(code, ...) pypto_sim_rt_report_fatal((code), __FUNCTION__, __VA_ARGS__)
#define LOG_ERROR(...) pypto_sim_rt_log(0, __FUNCTION__, __VA_ARGS__)
#define LOG_WARN(...) pypto_sim_rt_log(1, __FUNCTION__, __VA_ARGS__)
#define LOG_TIMING(...) pypto_sim_rt_log(2, __FUNCTION__, __VA_ARGS__)
#define LOG_INFO(...) pypto_sim_rt_log(3, __FUNCTION__, __VA_ARGS__)
#define LOG_DEBUG(...) pypto_sim_rt_log(4, __FUNCTION__, __VA_ARGS__)

#endif  // PYPTO_BUILD_SIM_PTO_ORCHESTRATION_API_H_
