// pypto_build/mix_kernel.h -- what a MIX kernel (a cluster of one AIC and two AIV cores running
// the same rendered source, cube:vector = 1:2) needs beyond portability.h: which core of its
// cluster it is, and, in the host simulation, a barrier over the ranks of its comm domain.
//
// Core identity. The source is compiled once per core type: on CANN with the cube or the vector
// arch (the compiler defines __DAV_C220_CUBE__ or __DAV_C220_VEC__), in the simulation with
// -D__DAV_CUBE__ or -D__DAV_VEC__. PYPTO_MIX_AIC says which side is being compiled. The two AIV
// cores of a cluster tell themselves apart by the sub-block id (0 or 1) the runtime writes into
// the core's GlobalContext at args[SPMD_GLOBAL_CONTEXT_INDEX]; the AIC's is 0.
//
// Synchronisation. On the device a MIX kernel synchronises through the hardware: cross-core
// flags and SyncAll inside a cluster, and HCCL's Commit/Wait between ranks (every rank's
// collective completes only once every member has taken part), so it needs no primitive here.
// A simulated kernel that exchanges data through its windows without HCCL instead calls
//   comm_barrier(ctx, parties_per_rank)
// which returns once `parties_per_rank` cores of every rank of ctx's comm domain have called it
// (every core of every cluster of the task, typically 3 * block count), and leaves no state in
// the windows: the barrier lives in the simulation runtime, behind the hook
//   int32_t pypto_sim_comm_barrier(const CommContext* ctx, int32_t parties_per_rank);
// a generation barrier of the domain ctx belongs to, bounded by the simulation's wait timeout.
// A party that times out reports SIMPLER_ERROR_SCHEDULER_TIMEOUT and breaks the barrier, so its
// peers fail at once instead of each waiting out its own timeout; a broken barrier fails every
// later call on that domain. The hook is weak, like portability.h's: without pypto-build's
// simulation runtime comm_barrier reports that it cannot synchronise and returns false.
//
// A kernel whose comm_barrier returns false has reported the error and returns at once, on every
// core: the task then ends with the error latched.

#ifndef PYPTO_BUILD_MIX_KERNEL_H_
#define PYPTO_BUILD_MIX_KERNEL_H_

#include <cstdint>

#include "pypto_build/kernel_abi.h"
#include "pypto_build/portability.h"

#if defined(__DAV_C220_CUBE__) || defined(__DAV_C310_CUBE__) || defined(__DAV_CUBE__)
#define PYPTO_MIX_AIC 1
#else
#define PYPTO_MIX_AIC 0
#endif

#if !defined(PYPTO_BUILD_TARGET_CANN)
extern "C" {
__attribute__((weak)) int32_t pypto_sim_comm_barrier(const CommContext* ctx,
                                                     int32_t parties_per_rank);
}
#endif

namespace pypto_build {

// Upstream's per-core context at args[SPMD_GLOBAL_CONTEXT_INDEX]: the sub-block id tells the two
// AIV cores of a cluster apart; the DMA workspaces serve asynchronous engines (zero in the
// simulation, which has none). The simulation runtime (tasks.cpp) fills one of this layout.
struct GlobalContext {
  int32_t sub_block_id;
  uint64_t dma_workspace[4];
};

static_assert(offsetof(GlobalContext, sub_block_id) == 0, "GlobalContext::sub_block_id offset");

// This core's sub-block in its cluster: 0 or 1 on the AIV side, 0 on the AIC.
PYPTO_DEVICE int32_t sub_block_id(__gm__ int64_t* args) {
  return reinterpret_cast<__gm__ GlobalContext*>(args[SPMD_GLOBAL_CONTEXT_INDEX])->sub_block_id;
}

// Bytes of one element of `dtype` (0 for a value outside the enumeration): a fused kernel takes
// scratch operands of any element type (a workspace window) and addresses them in bytes.
PYPTO_DEVICE int64_t element_bytes(DataType dtype) {
  switch (dtype) {
    case DataType::FLOAT32:
    case DataType::INT32:
    case DataType::UINT32:
      return 4;
    case DataType::FLOAT16:
    case DataType::BFLOAT16:
    case DataType::INT16:
    case DataType::UINT16:
      return 2;
    case DataType::INT64:
    case DataType::UINT64:
      return 8;
    case DataType::INT8:
    case DataType::UINT8:
    case DataType::BOOL:
    case DataType::FP8E4M3FN:
    case DataType::FP8E8M0:
    case DataType::FP4E2M1:
      return 1;
  }
  return 0;
}

// The bytes of a tensor of any element type, and where its first element starts.
PYPTO_DEVICE int64_t tensor_bytes(__gm__ ChipTensor* tensor) {
  return tensor_numel(tensor) * element_bytes(tensor->dtype);
}

PYPTO_DEVICE __gm__ uint8_t* tensor_bytes_data(__gm__ ChipTensor* tensor) {
  return reinterpret_cast<__gm__ uint8_t*>(tensor->buffer.addr) +
         static_cast<int64_t>(tensor->start_offset) * element_bytes(tensor->dtype);
}

#if !defined(PYPTO_BUILD_TARGET_CANN)

// Wait until `parties_per_rank` cores of every rank of ctx's domain have arrived (module
// comment); false after reporting a timeout, a broken barrier or a missing runtime.
PYPTO_DEVICE bool comm_barrier(__gm__ CommContext* ctx, int32_t parties_per_rank) {
  if (pypto_sim_comm_barrier == nullptr) {
    report_error(SIMPLER_ERROR_INVALID_ARGS,
                 "comm_barrier needs pypto-build's simulation runtime (pypto_sim_comm_barrier)");
    return false;
  }
  return pypto_sim_comm_barrier(ctx, parties_per_rank) != 0;
}

#endif

}  // namespace pypto_build

#endif  // PYPTO_BUILD_MIX_KERNEL_H_
