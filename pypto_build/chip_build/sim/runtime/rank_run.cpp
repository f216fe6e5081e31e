// rank_run.cpp -- error latching, logs and runtime-owned tensors of one rank's run, and the
// descriptor helpers every part of the runtime shares.

#include <cstdio>
#include <cstring>
#include <utility>

#include "sim_internal.h"
// After the API it is written against.
#include "pypto_build/orchestration.h"
#include "sim_runtime.h"

namespace pypto_sim {

const char* core_type_name(CoreType core_type) {
  return core_type == CoreType::AIV ? "aiv" : "aic";
}

RankRun::RankRun(int32_t rank, std::string next_level, int32_t aiv_capacity,
                 int32_t aic_capacity)
    : rank_(rank),
      next_level_(std::move(next_level)),
      aiv_capacity_(aiv_capacity),
      aic_capacity_(aic_capacity) {}

int32_t RankRun::sync_start_limit(CoreType core_type) const {
  // AIV-only shapes are bounded by the AIV count, every other shape by the cluster count
  // (one AIC per cluster), as the device runtime's submit-time check does.
  return core_type == CoreType::AIV ? aiv_capacity_ : aic_capacity_;
}

void RankRun::report(int32_t code, const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex_);
  int32_t none = 0;
  if (code_.compare_exchange_strong(none, code, std::memory_order_acq_rel)) {
    message_ = message;
    log_.push_back(std::make_unique<std::string>(format("FATAL(code=%d): ", code) + message));
  } else {
    log_.push_back(std::make_unique<std::string>(
        format("FATAL(code=%d, latched=%d): ", code, none) + message));
  }
}

void RankRun::refuse(const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex_);
  code_.store(PYPTO_SIM_RUN_REFUSED, std::memory_order_release);
  message_ = message;
  log_.push_back(std::make_unique<std::string>("refused: " + message));
}

const char* RankRun::message() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return message_.c_str();
}

void RankRun::log(const std::string& line) {
  std::lock_guard<std::mutex> lock(mutex_);
  log_.push_back(std::make_unique<std::string>(line));
}

int32_t RankRun::log_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int32_t>(log_.size());
}

const char* RankRun::log_line(int32_t index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (index < 0 || static_cast<size_t>(index) >= log_.size()) {
    return nullptr;
  }
  return log_[static_cast<size_t>(index)]->c_str();
}

ChipTensor RankRun::create_tensor(DataType dtype, const uint32_t* shapes, uint32_t ndims) {
  ChipTensor tensor{};
  const uint64_t size = element_size(dtype);
  if (size == 0 || ndims == 0 || ndims > RUNTIME_MAX_TENSOR_DIMS) {
    report(SIMPLER_ERROR_INVALID_ARGS,
           format("alloc_tensors: unsupported DataType %d or dimension count %u",
                  static_cast<int>(dtype), static_cast<unsigned>(ndims)));
    return tensor;
  }
  uint64_t numel = 1;
  uint32_t strides[RUNTIME_MAX_TENSOR_DIMS] = {};
  for (uint32_t dim = ndims; dim-- > 0;) {
    strides[dim] = static_cast<uint32_t>(numel);
    numel *= shapes[dim];
  }
  const uint64_t nbytes = numel * size;
  // Value-initialised: a fresh runtime tensor reads as zeros, as a memset device buffer does.
  std::unique_ptr<uint8_t[]> storage(new uint8_t[nbytes == 0 ? 1 : nbytes]());
  describe(&tensor, reinterpret_cast<uint64_t>(storage.get()), nbytes, 0, dtype, ndims, shapes,
           strides);
  std::lock_guard<std::mutex> lock(mutex_);
  allocations_.push_back(std::move(storage));
  return tensor;
}

ThreadContext& thread_context() {
  thread_local ThreadContext context;
  return context;
}

uint64_t element_size(DataType dtype) {
  switch (dtype) {
    case DataType::FLOAT32:
    case DataType::INT32:
    case DataType::UINT32:
      return 4;
    case DataType::FLOAT16:
    case DataType::INT16:
    case DataType::BFLOAT16:
    case DataType::UINT16:
      return 2;
    case DataType::INT8:
    case DataType::UINT8:
    case DataType::BOOL:
    case DataType::FP8E4M3FN:
    case DataType::FP8E8M0:
    case DataType::FP4E2M1:
      return 1;
    case DataType::INT64:
    case DataType::UINT64:
      return 8;
  }
  return 0;
}

void describe(ChipTensor* tensor, uint64_t addr, uint64_t nbytes, uint64_t start_offset,
              DataType dtype, uint32_t ndims, const uint32_t* shapes, const uint32_t* strides) {
  *tensor = ChipTensor{};
  tensor->buffer.addr = addr;
  tensor->buffer.size = nbytes;
  tensor->owner_task_id = UINT64_MAX;  // created outside any task
  tensor->start_offset = start_offset;
  tensor->ndims = ndims;
  tensor->dtype = dtype;
  tensor->address_space = AddressSpace::DEVICE;
  uint64_t extent = 1;
  for (uint32_t dim = 0; dim < ndims && dim < RUNTIME_MAX_TENSOR_DIMS; ++dim) {
    tensor->shapes[dim] = shapes[dim];
    tensor->strides[dim] = strides[dim];
    extent = shapes[dim] == 0 || extent == 0
                 ? 0
                 : extent + static_cast<uint64_t>(shapes[dim] - 1) * strides[dim];
  }
  tensor->extent_elem_cache = extent;
  tensor->is_contiguous = pypto_build::is_contiguous(*tensor);
}

std::string vformat(const char* format_text, va_list values) {
  va_list measure;
  va_copy(measure, values);
  const int length = std::vsnprintf(nullptr, 0, format_text, measure);
  va_end(measure);
  if (length <= 0) {
    return std::string();
  }
  std::string text(static_cast<size_t>(length) + 1, '\0');
  std::vsnprintf(&text[0], text.size(), format_text, values);
  text.resize(static_cast<size_t>(length));
  return text;
}

std::string format(const char* format_text, ...) {
  va_list values;
  va_start(values, format_text);
  std::string text = vformat(format_text, values);
  va_end(values);
  return text;
}

}  // namespace pypto_sim
