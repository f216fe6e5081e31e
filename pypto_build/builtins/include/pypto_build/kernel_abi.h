// pypto_build/kernel_abi.h -- the kernel argument ABI, one contract for CANN, the host simulator
// and external kernels (the argument layout of simpler 6ebaf77's kernels).
//
// It keeps the upstream runtime's layout and field names, so a kernel written for PyPTO's runtime
// builds here unchanged and ours run there:
//
//   kernel_entry(int64_t* args)
//     args[0 .. T)       pointers to ChipTensor descriptors, one per tensor argument
//     args[T .. T+S)     raw 64-bit scalars; a CommContext is passed by address as a scalar
//     args[48]           &LocalContext of this block (block index and count)
//     args[49]           &GlobalContext (upstream; unused by the builtin kernels)
//
// A runtime therefore hands every kernel an args array of KERNEL_MAX_ARGS slots. The simulator
// does exactly what the device runtime does: it fills slot SPMD_LOCAL_CONTEXT_INDEX with the
// address of a per-block LocalContext, so get_block_idx(args) / get_block_num(args) read the same
// slot on both sides and need no thread-local state.
//
// The layouts are pinned with static_asserts; tests read the sizes back from a compiled program.
// This header is plain C++17 and includes nothing target specific, so host code (the simulation
// runtime, orchestration sources) includes it as well.

#ifndef PYPTO_BUILD_KERNEL_ABI_H_
#define PYPTO_BUILD_KERNEL_ABI_H_

#include <cstddef>
#include <cstdint>

// The CANN device compiler defines __CCE_AICORE__ and knows __gm__/__aicore__ as keywords; every
// other compiler sees them as empty qualifiers.
#if defined(__CCE_AICORE__)
#define PYPTO_BUILD_TARGET_CANN 1
#else
#ifndef __gm__
#define __gm__
#endif
#ifndef __aicore__
#define __aicore__
#endif
#endif

// Upstream's limits: descriptor dims, ranks per comm domain, tensor and scalar arguments per task.
constexpr uint32_t RUNTIME_MAX_TENSOR_DIMS = 5;
constexpr uint32_t COMM_MAX_RANK_NUM = 64;
constexpr int32_t MAX_TENSOR_ARGS = 32;
constexpr int32_t MAX_SCALAR_ARGS = 16;

// args[] slots of the per-dispatch contexts, and the size of the args array a runtime passes.
constexpr int32_t SPMD_LOCAL_CONTEXT_INDEX = 48;
constexpr int32_t SPMD_GLOBAL_CONTEXT_INDEX = 49;
constexpr int32_t KERNEL_MAX_ARGS = 50;
static_assert(MAX_TENSOR_ARGS + MAX_SCALAR_ARGS <= SPMD_LOCAL_CONTEXT_INDEX,
              "argument slots must not overlap the context slots");

// Error codes as the runtime latches them (first code wins; the run fails with -code).
constexpr int32_t SIMPLER_ERROR_INVALID_ARGS = 5;
constexpr int32_t SIMPLER_ERROR_REQUIRE_SYNC_START_INVALID = 7;
// A kernel wait that never completes: the runtime's "running task stalled" timeout.
constexpr int32_t SIMPLER_ERROR_SCHEDULER_TIMEOUT = 100;

// Element type of a tensor (upstream DataType values; one byte).
enum class DataType : uint8_t {
  FLOAT32 = 0,
  FLOAT16 = 1,
  INT32 = 2,
  INT16 = 3,
  INT8 = 4,
  UINT8 = 5,
  BFLOAT16 = 6,
  INT64 = 7,
  UINT64 = 8,
  UINT16 = 9,
  UINT32 = 10,
  BOOL = 11,
  FP8E4M3FN = 12,
  FP8E8M0 = 13,
  FP4E2M1 = 14,
};

enum class AddressSpace : uint8_t {
  HOST = 0,
  DEVICE = 1,
};

struct PTOBufferHandle {
  uint64_t addr;  // base address of the allocation, bytes
  uint64_t size;  // allocation size, bytes
};

// A tensor argument: a view into a buffer. Element pointer = (T*)buffer.addr + start_offset;
// the byte offset of element c[] is (start_offset + sum c[i] * strides[i]) * sizeof(T).
struct alignas(64) ChipTensor {
  PTOBufferHandle buffer;
  uint64_t owner_task_id;  // creator task; UINT64_MAX for external tensors
  uint64_t start_offset;   // view origin, in elements from buffer.addr
  int32_t version;
  uint32_t ndims;  // 1 .. RUNTIME_MAX_TENSOR_DIMS
  DataType dtype;
  bool manual_dep;
  bool is_contiguous;  // strides == row-major strides of shapes
  AddressSpace address_space;
  uint32_t shapes[RUNTIME_MAX_TENSOR_DIMS];  // view shape, elements
  uint64_t extent_elem_cache;                // 1 + sum (shapes[i] - 1) * strides[i]
  uint32_t strides[RUNTIME_MAX_TENSOR_DIMS];  // element strides, all > 0
  uint8_t reserved[36];
};

// The name PyPTO-generated kernels use for the same descriptor.
using Tensor = ChipTensor;

static_assert(sizeof(ChipTensor) == 128, "ChipTensor is 128 bytes");
static_assert(alignof(ChipTensor) == 64, "ChipTensor is 64-byte aligned");
static_assert(offsetof(ChipTensor, buffer) == 0, "ChipTensor::buffer offset");
static_assert(offsetof(ChipTensor, owner_task_id) == 16, "ChipTensor::owner_task_id offset");
static_assert(offsetof(ChipTensor, start_offset) == 24, "ChipTensor::start_offset offset");
static_assert(offsetof(ChipTensor, version) == 32, "ChipTensor::version offset");
static_assert(offsetof(ChipTensor, ndims) == 36, "ChipTensor::ndims offset");
static_assert(offsetof(ChipTensor, dtype) == 40, "ChipTensor::dtype offset");
static_assert(offsetof(ChipTensor, manual_dep) == 41, "ChipTensor::manual_dep offset");
static_assert(offsetof(ChipTensor, is_contiguous) == 42, "ChipTensor::is_contiguous offset");
static_assert(offsetof(ChipTensor, address_space) == 43, "ChipTensor::address_space offset");
static_assert(offsetof(ChipTensor, shapes) == 44, "ChipTensor::shapes offset");
static_assert(offsetof(ChipTensor, extent_elem_cache) == 64, "ChipTensor::extent offset");
static_assert(offsetof(ChipTensor, strides) == 72, "ChipTensor::strides offset");

// One rank's view of its comm domain. windowsIn[i] is the base address of rank i's window as
// this rank sees it, so a window pointer moves to peer `pe` as
//   windowsIn[pe] + (local - windowsIn[rankId]).
// The layout is shared with PTO-ISA's device context and must stay byte-identical.
struct CommContext {
  uint64_t workSpace;      // async-DMA workspace (0 when there is none, e.g. in simulation)
  uint64_t workSpaceSize;  // bytes
  uint32_t rankId;         // this rank's dense index in the domain
  uint32_t rankNum;        // ranks in the domain
  uint64_t winSize;        // bytes of every rank's window
  uint64_t windowsIn[COMM_MAX_RANK_NUM];
  uint64_t windowsOut[COMM_MAX_RANK_NUM];
};

static_assert(sizeof(CommContext) == 1056, "CommContext is 1056 bytes");
static_assert(offsetof(CommContext, rankId) == 16, "CommContext::rankId offset");
static_assert(offsetof(CommContext, rankNum) == 20, "CommContext::rankNum offset");
static_assert(offsetof(CommContext, winSize) == 24, "CommContext::winSize offset");
static_assert(offsetof(CommContext, windowsIn) == 32, "CommContext::windowsIn offset");
static_assert(offsetof(CommContext, windowsOut) == 544, "CommContext::windowsOut offset");

// The per-dispatch block identity at args[SPMD_LOCAL_CONTEXT_INDEX]: block_idx in
// [0, block_num), block_num = the task's launch width. Runtimes may append fields.
struct LocalContext {
  int32_t block_idx;
  int32_t block_num;
};

static_assert(offsetof(LocalContext, block_num) == 4, "LocalContext::block_num offset");

// Block identity of the running kernel. Use these, never the argument-less device intrinsics,
// which the runtime does not program.
inline __aicore__ int32_t get_block_idx(__gm__ int64_t* args) {
  return reinterpret_cast<__gm__ LocalContext*>(args[SPMD_LOCAL_CONTEXT_INDEX])->block_idx;
}

inline __aicore__ int32_t get_block_num(__gm__ int64_t* args) {
  return reinterpret_cast<__gm__ LocalContext*>(args[SPMD_LOCAL_CONTEXT_INDEX])->block_num;
}

#endif  // PYPTO_BUILD_KERNEL_ABI_H_
