// pypto_build/orchestration_api.h -- the orchestration API subset the builtin entries
// (entry.cpp.in) are written against.
//
// Names and call shapes are the upstream runtime's (ChipTaskArgs with tensor(i).ref() and
// scalar<T>(i), CoreTaskArgs with add_input / add_inout / add_scalar and a launch_spec,
// rt_submit_aiv_task, rt_report_fatal, LOG_TIMING, OrchestrationConfig), so one entry source
// serves both targets:
//   * A CANN build defines PYPTO_BUILD_RUNTIME_ORCHESTRATION_API and puts the runtime's
//     orchestration include directories on the path: this header then includes the runtime's
//     own <orchestration_api.h>, which provides everything.
//   * Otherwise (host simulation) the declarations below apply. The argument containers are
//     defined here, as plain data the simulation runtime fills and reads; the runtime defines
//     the C functions rt_submit_aiv_task, rt_report_fatal and rt_log_timing, which the
//     orchestration shared object leaves undefined until the runtime loads it.
// The helpers in namespace pypto_build at the end are available either way.

#ifndef PYPTO_BUILD_ORCHESTRATION_API_H_
#define PYPTO_BUILD_ORCHESTRATION_API_H_

#include <cstdint>
#include <type_traits>

#define PYPTO_ORCH_EXPORT __attribute__((visibility("default")))

#if defined(PYPTO_BUILD_RUNTIME_ORCHESTRATION_API)

#include <orchestration_api.h>

#else

#include <cstring>

#include "pypto_build/kernel_abi.h"

// One tensor argument of the orchestration; ref() is its descriptor.
class TensorArg {
 public:
  explicit TensorArg(ChipTensor* tensor) : tensor_(tensor) {}
  ChipTensor& ref() const { return *tensor_; }

 private:
  ChipTensor* tensor_;
};

// What the runtime hands the orchestration entry: tensors first, then raw 64-bit scalars.
struct ChipTaskArgs {
  ChipTensor* tensors[MAX_TENSOR_ARGS];
  uint64_t scalars[MAX_SCALAR_ARGS];
  int32_t tensor_count;
  int32_t scalar_count;

  TensorArg tensor(int32_t i) const { return TensorArg(tensors[i]); }

  // Scalar i reinterpreted as T (the bits a host passed, e.g. a signed count).
  template <typename T = uint64_t>
  T scalar(int32_t i) const {
    static_assert(sizeof(T) <= sizeof(uint64_t), "a scalar slot holds 64 bits");
    T value;
    std::memcpy(&value, &scalars[i], sizeof(T));
    return value;
  }
};

// How a task uses a tensor argument; the runtime derives its dependency edges from it.
enum class TensorArgType : uint8_t {
  INPUT,
  INOUT,
  // An existing tensor the task overwrites without reading (pl.Out); it depends on its creator.
  OUTPUT_EXISTING,
};

// Launch width and start policy of a task. Chips name the width setter differently (a2a3:
// set_block_num, a5: set_core_num); both set the same width.
struct LaunchSpec {
  int32_t block_num = 1;
  bool require_sync_start = false;

  void set_block_num(int32_t blocks) { block_num = blocks; }
  void set_core_num(int32_t cores) { block_num = cores; }
  void set_require_sync_start(bool sync_start) { require_sync_start = sync_start; }
};

// The arguments of one kernel task. Like the runtime's, it stores pointers to the descriptors
// (so temporaries are refused at compile time), requires tensors before scalars, and latches the
// first construction error instead of failing, for the runtime to report at submit.
struct CoreTaskArgs {
  const ChipTensor* tensors[MAX_TENSOR_ARGS] = {};
  TensorArgType tensor_types[MAX_TENSOR_ARGS] = {};
  uint64_t scalars[MAX_SCALAR_ARGS] = {};
  int32_t tensor_count = 0;
  int32_t scalar_count = 0;
  bool has_error = false;
  const char* error_msg = nullptr;
  LaunchSpec launch_spec;

  void add_input(const ChipTensor& tensor) { add_tensor(tensor, TensorArgType::INPUT); }
  void add_inout(const ChipTensor& tensor) { add_tensor(tensor, TensorArgType::INOUT); }
  void add_output(const ChipTensor& tensor) { add_tensor(tensor, TensorArgType::OUTPUT_EXISTING); }
  void add_input(const ChipTensor&&) = delete;
  void add_inout(const ChipTensor&&) = delete;
  void add_output(const ChipTensor&&) = delete;

  void add_scalar(uint64_t value) {
    if (scalar_count == MAX_SCALAR_ARGS) {
      set_error("too many scalar arguments");
      return;
    }
    scalars[scalar_count++] = value;
  }

 private:
  void add_tensor(const ChipTensor& tensor, TensorArgType type) {
    if (scalar_count > 0) {
      set_error("a tensor argument was added after a scalar");
    } else if (tensor_count == MAX_TENSOR_ARGS) {
      set_error("too many tensor arguments");
    } else {
      tensors[tensor_count] = &tensor;
      tensor_types[tensor_count] = type;
      ++tensor_count;
    }
  }

  void set_error(const char* message) {
    if (!has_error) {
      has_error = true;
      error_msg = message;
    }
  }
};

// Returned by aicpu_orchestration_config: the runtime fails a run that passes fewer arguments.
struct OrchestrationConfig {
  int expected_arg_count;
};

extern "C" {
// Submit one AIV task running kernel `func_id` of this callable's kernel_config.py.
void rt_submit_aiv_task(int32_t func_id, const CoreTaskArgs& args);
// The same for an AIC (cube) kernel.
void rt_submit_aic_task(int32_t func_id, const CoreTaskArgs& args);
// A fresh tensor of `ndims` dimensions `shapes`, packed row-major, owned by the runtime
// (pl.create_tensor in an orchestration body).
ChipTensor rt_create_tensor(DataType dtype, const uint32_t* shapes, uint32_t ndims);
// Latch a fatal error (first code wins); later submissions of the run are dropped.
void rt_report_fatal(int32_t code, const char* format, ...) __attribute__((format(printf, 2, 3)));
// A launch-decision log line, kept when the runtime records timing diagnostics.
void rt_log_timing(const char* format, ...) __attribute__((format(printf, 1, 2)));
}

#define LOG_TIMING(...) rt_log_timing(__VA_ARGS__)

#endif  // PYPTO_BUILD_RUNTIME_ORCHESTRATION_API

namespace pypto_build {

// A launch-count scalar of the entry (nranks, core_num), validated on its raw 64-bit value so that
// 2^32 + 2 cannot pass as 2. Outside [1, INT32_MAX] it reports
// "<what> must be in [1, 2147483647], got <value>" and returns false.
inline bool read_positive_int32(const ChipTaskArgs& args, int32_t slot, const char* what,
                                int32_t* value) {
  const int64_t raw = args.scalar<int64_t>(slot);
  if (raw < 1 || raw > INT32_MAX) {
    rt_report_fatal(SIMPLER_ERROR_INVALID_ARGS, "%s must be in [1, %d], got %lld", what, INT32_MAX,
                    static_cast<long long>(raw));
    return false;
  }
  *value = static_cast<int32_t>(raw);
  return true;
}

// Credit lanes of a signal descriptor: S of [NR, S]; 1 for a rank-1 signal.
template <typename Descriptor>
int64_t signal_lanes(const Descriptor& signal) {
  return signal.ndims == 1 ? 1 : static_cast<int64_t>(signal.shapes[1]);
}

// The descriptor DataType of a builtin payload element type.
template <typename T>
constexpr DataType payload_data_type() {
  static_assert(std::is_same<T, float>::value || std::is_same<T, int8_t>::value,
                "builtin payloads are FP32 or INT8");
  return std::is_same<T, float>::value ? DataType::FLOAT32 : DataType::INT8;
}

}  // namespace pypto_build

#endif  // PYPTO_BUILD_ORCHESTRATION_API_H_
