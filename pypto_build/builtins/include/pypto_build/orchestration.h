// pypto_build/orchestration.h -- what a generated CHIP orchestration (and a builtin's HOST-rail
// entry) computes on the AICPU besides submitting tasks. It travels with every sub-build
// (``include/pypto_build/``) and is included by a path relative to the orchestration source,
// after "pto_orchestration_api.h": it is written against PyPTO's orchestration API (ChipTensor's
// fields, TensorCreateInfo, alloc_tensors, rt_report_fatal, PTO2_ERROR_INVALID_ARGS), which
// PyPTO's runtime and our simulator both provide, and includes nothing of pypto-build's.
//
// * Tensor views. pl.slice / pl.reshape / pl.view in an orchestration body derive a new
//   descriptor from an existing one; no data moves, the view shares its source's buffer. The
//   runtime descriptor has no valid-shape or layout field, so pl.set_validshape and a view that
//   only changes those leave the descriptor as it is (the orchestration codegen reuses the source).
// * Runtime allocation. pl.create_tensor asks the runtime for a fresh buffer (alloc_tensors).
// * The contiguity test behind require_contiguous_operands.
// * Explicit task dependencies: the orderings the runtime's TensorMap does not derive (it
//   tracks producers, not readers), as the valid ids among a task's candidates.
// * Python's scalar semantics where C++ differs: floor division and modulo round towards
//   negative infinity, and a scalar task argument is passed as its raw 64-bit pattern.
// * Launch-count scalars of a builtin entry, validated on their raw 64-bit value.
//
// A request the descriptor cannot satisfy (a slice outside its source, a reshape of a strided
// view, a division by zero) latches PTO2_ERROR_INVALID_ARGS through rt_report_fatal, exactly
// as a bad task argument does, and yields the source unchanged: the runtime drops every later
// submission of the run, so nothing computes on the wrong view.

#ifndef PYPTO_BUILD_ORCHESTRATION_H_
#define PYPTO_BUILD_ORCHESTRATION_H_

#include <cmath>
#include <cstdint>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <type_traits>

namespace pypto_build {

// Whether the elements of `tensor` are packed row-major. Dimensions of extent 1 take any stride
// (the region they span is the same), so a one-row slice of a matrix is contiguous and a
// one-column slice of a wider one is not.
template <typename Descriptor>
inline bool is_contiguous(const Descriptor& tensor) {
  uint64_t packed = 1;
  for (uint32_t dim = tensor.ndims; dim-- > 0;) {
    if (tensor.shapes[dim] != 1 && tensor.strides[dim] != packed) {
      return false;
    }
    packed *= tensor.shapes[dim];
  }
  return true;
}

// The dependencies of one task for CoreTaskArgs::set_dependencies: the tasks it must follow that
// were submitted in this run. A candidate is the last submitted instance of another task of the
// orchestration (or of the same one, in a loop); one not submitted yet (an earlier loop
// iteration, a branch not taken) holds PTO2TaskId::invalid() and is left out, since the runtime
// refuses an invalid id. The array lives until the submit, as set_dependencies requires.
template <size_t N>
struct TaskDeps {
  PTO2TaskId ids[N];
  uint32_t count = 0;

  explicit TaskDeps(std::initializer_list<PTO2TaskId> candidates) {
    for (const PTO2TaskId& candidate : candidates) {
      if (candidate.is_valid() && count < N) {
        ids[count++] = candidate;
      }
    }
  }
};

namespace detail {

// Refresh the cached fields a view changes: the element extent and the contiguity flag.
inline void refresh_view(ChipTensor* tensor) {
  uint64_t extent = 1;
  for (uint32_t dim = 0; dim < tensor->ndims; ++dim) {
    if (tensor->shapes[dim] == 0) {
      extent = 0;
      break;
    }
    extent += static_cast<uint64_t>(tensor->shapes[dim] - 1) * tensor->strides[dim];
  }
  tensor->extent_elem_cache = extent;
  tensor->is_contiguous = is_contiguous(*tensor);
}

// Packed row-major strides of the first `ndims` entries of `shapes`.
inline void pack_strides(ChipTensor* tensor) {
  uint32_t packed = 1;
  for (uint32_t dim = tensor->ndims; dim-- > 0;) {
    tensor->strides[dim] = packed;
    packed *= tensor->shapes[dim];
  }
}

inline bool rank_matches(const char* op, const ChipTensor& source, size_t ndims) {
  if (source.ndims != ndims) {
    rt_report_fatal(PTO2_ERROR_INVALID_ARGS, "%s: the tensor has %u dimensions, expected %u", op,
                    static_cast<unsigned>(source.ndims), static_cast<unsigned>(ndims));
    return false;
  }
  return true;
}

}  // namespace detail

// pl.slice(source, shape, offsets): the region of extent `shape` starting at `offsets`, with the
// source's strides.
inline ChipTensor slice(const ChipTensor& source, std::initializer_list<uint32_t> shape,
                        std::initializer_list<int64_t> offsets) {
  if (!detail::rank_matches("tensor.slice", source, shape.size())) {
    return source;
  }
  ChipTensor view = source;
  const uint32_t* extent = shape.begin();
  const int64_t* offset = offsets.begin();
  for (uint32_t dim = 0; dim < source.ndims; ++dim) {
    if (offset[dim] < 0 || offset[dim] + extent[dim] > source.shapes[dim]) {
      rt_report_fatal(PTO2_ERROR_INVALID_ARGS,
                      "tensor.slice: offset %lld + extent %u exceeds dimension %u of size %u",
                      static_cast<long long>(offset[dim]), static_cast<unsigned>(extent[dim]),
                      static_cast<unsigned>(dim), static_cast<unsigned>(source.shapes[dim]));
      return source;
    }
    view.start_offset += static_cast<uint64_t>(offset[dim]) * source.strides[dim];
    view.shapes[dim] = extent[dim];
  }
  detail::refresh_view(&view);
  return view;
}

// pl.reshape(source, shape) (and pl.view with a shape): the same elements under a new packed
// shape. Only a contiguous source has one.
inline ChipTensor reshape(const ChipTensor& source, std::initializer_list<uint32_t> shape) {
  if (shape.size() == 0 || shape.size() > MAX_TENSOR_DIMS) {
    rt_report_fatal(PTO2_ERROR_INVALID_ARGS, "tensor.reshape: %u dimensions are not supported",
                    static_cast<unsigned>(shape.size()));
    return source;
  }
  if (!is_contiguous(source)) {
    rt_report_fatal(PTO2_ERROR_INVALID_ARGS, "tensor.reshape: the source is not contiguous");
    return source;
  }
  ChipTensor view = source;
  view.ndims = static_cast<uint32_t>(shape.size());
  uint32_t dim = 0;
  for (uint32_t extent : shape) {
    view.shapes[dim++] = extent;
  }
  for (; dim < MAX_TENSOR_DIMS; ++dim) {
    view.shapes[dim] = 0;
    view.strides[dim] = 0;
  }
  detail::pack_strides(&view);
  detail::refresh_view(&view);
  return view;
}

// pl.create_tensor(shape, dtype): a fresh runtime allocation, packed row-major. After a fatal
// error the runtime allocates nothing and the result is an empty descriptor nothing reads.
inline ChipTensor create_tensor(DataType dtype, std::initializer_list<uint32_t> shape) {
  const TensorCreateInfo info(shape.begin(), static_cast<uint32_t>(shape.size()), dtype);
  const TaskOutputTensors outputs = alloc_tensors(info);
  if (outputs.empty()) {
    return ChipTensor{};
  }
  return outputs.get_ref(0);
}

// Python's a // b for the scalar type T.
template <typename T>
inline T floordiv(T a, T b) {
  if (b == 0) {
    rt_report_fatal(PTO2_ERROR_INVALID_ARGS, "integer division or modulo by zero");
    return 0;
  }
  if constexpr (std::is_floating_point<T>::value) {
    return static_cast<T>(std::floor(a / b));
  } else {
    const T quotient = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? quotient - 1 : quotient;
  }
}

// Python's a % b for the scalar type T: the result takes the sign of b.
template <typename T>
inline T floormod(T a, T b) {
  if (b == 0) {
    rt_report_fatal(PTO2_ERROR_INVALID_ARGS, "integer division or modulo by zero");
    return 0;
  }
  if constexpr (std::is_floating_point<T>::value) {
    return static_cast<T>(a - std::floor(a / b) * b);
  } else {
    const T remainder = a % b;
    return (remainder != 0 && ((remainder < 0) != (b < 0))) ? remainder + b : remainder;
  }
}

// The 64-bit pattern of a scalar task argument: integers sign-extended, floating-point values
// bit-cast (a float occupies the low 32 bits), as the runtime passes them to kernels.
template <typename T>
inline uint64_t scalar_bits(T value) {
  static_assert(std::is_arithmetic<T>::value, "a scalar argument is a number or a bool");
  if constexpr (std::is_floating_point<T>::value) {
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof(T));
    return bits;
  } else {
    return static_cast<uint64_t>(static_cast<int64_t>(value));
  }
}

// A scalar argument of the entry as type T: the inverse of scalar_bits (integers narrowed from
// their sign-extended pattern, floating-point values bit-cast back).
template <typename T>
inline T scalar_value(uint64_t bits) {
  static_assert(std::is_arithmetic<T>::value, "a scalar argument is a number or a bool");
  if constexpr (std::is_floating_point<T>::value) {
    T value;
    std::memcpy(&value, &bits, sizeof(T));
    return value;
  } else {
    return static_cast<T>(static_cast<int64_t>(bits));
  }
}

// A launch-count scalar of a builtin entry (nranks, core_num), validated on its raw 64-bit value
// so that 2^32 + 2 cannot pass as 2. Outside [1, INT32_MAX] it reports
// "<what> must be in [1, 2147483647], got <value>" and returns false.
inline bool read_positive_int32(uint64_t bits, const char* what, int32_t* value) {
  const int64_t raw = static_cast<int64_t>(bits);
  if (raw < 1 || raw > INT32_MAX) {
    rt_report_fatal(PTO2_ERROR_INVALID_ARGS, "%s must be in [1, %d], got %lld", what, INT32_MAX,
                    static_cast<long long>(raw));
    return false;
  }
  *value = static_cast<int32_t>(raw);
  return true;
}

// Credit lanes of a signal descriptor: S of [NR, S]; 1 for a rank-1 signal.
inline int64_t signal_lanes(const ChipTensor& signal) {
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

#endif  // PYPTO_BUILD_ORCHESTRATION_H_
