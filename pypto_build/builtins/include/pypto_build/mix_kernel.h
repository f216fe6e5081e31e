// pypto_build/mix_kernel.h -- what a MIX kernel (a cluster of one AIC and two AIV cores running
// the same rendered source, cube:vector = 1:2) needs beyond portability.h: which core of its
// cluster it is, operands of any element type by bytes, and a barrier over the cores of every
// rank of its comm domain for a kernel that exchanges data through its windows without HCCL.
//
// Core identity. The source is compiled once per core type: on CANN with the cube or the vector
// arch (the compiler defines __DAV_C220_CUBE__ or __DAV_C220_VEC__), in the simulation with
// -D__DAV_CUBE__ or -D__DAV_VEC__. PYPTO_MIX_AIC says which side is being compiled. The two AIV
// cores of a cluster tell themselves apart by the sub-block id (0 or 1) the runtime writes into
// the core's GlobalContext at args[SPMD_GLOBAL_CONTEXT_INDEX]; the AIC's is 0.
//
// Synchronisation. On the device a MIX kernel synchronises through the hardware: cross-core
// flags and SyncAll inside a cluster, and HCCL's Commit/Wait between ranks (every rank's
// collective completes only once every member has taken part). Code that exchanges data through
// the windows itself (host_mix.h's HCCL client, which the MC2 kernel's simulation runs) meets its
// peers at a CommBarrier, built from portability.h's signal primitives alone, like all_to_all_v's
// credit barrier (all_to_all_v_protocol.h), so it runs the same on any runtime that maps the
// windows:
//
//   Members   `nranks` ranks of the domain: first, first + stride, ... (every rank by default;
//             host_mix.h: one HCCL group, e.g. a TP group of contiguous ranks or an EP group of
//             ranks tp apart).
//   Parties   `parties` cores on each member rank (host_mix.h: the one core that drives HCCL),
//             each with a party index in [0, parties); N = parties * nranks.
//   Slots     one int32 counter per party, rank r's `parties` counters in its window at the
//             same offset on every rank (the caller picks it, e.g. comm_barrier_slots_at_end),
//             zero before the first call: comm_barrier_bytes(parties) bytes, whatever the rank
//             count, so the barrier takes as little room as it can beside a kernel's data.
//   Round k   (k = 1, 2, ... within one call) publish_fence, +1 on the counter of every other
//             party (the rank's own other cores and every core of every member rank), then wait
//             until this party's counter holds >= (N - 1) * k. No party passes round k before
//             every party has entered it: until the first one passes, nobody has sent a credit
//             of round k + 1, so (N - 1) * k credits are k from each of the N - 1 others. The
//             credits are seq_cst read-modify-writes and the wait an acquire load, so whatever a
//             party wrote before a round is visible to every party past it.
//   Epilogue  comm_barrier_finish(barrier, rounds): -(N - 1) * rounds on this party's counter.
//             A party that has finished the call may already have added credits of its next
//             call; they stay, and count for that call, since every party sends exactly
//             `rounds` credits to every other per call. So a call leaves every counter as it
//             found it, and back-to-back calls on one window need no reset.
// A wait that runs out has reported SIMPLER_ERROR_SCHEDULER_TIMEOUT (with pypto-build's
// simulation runtime) or trapped (without it, portability.h); a party whose round returns false
// returns at once, without its epilogue: the task has failed. Its peers each wait out their own
// timeout, concurrently, so a failed barrier costs about one wait budget.

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

// ---- the cross-rank barrier (module comment) ------------------------------------------------

struct CommBarrier {
  __gm__ CommContext* ctx;
  __gm__ int32_t* slots;  // this rank's counters, at the same window offset on every rank
  int64_t nranks;         // members
  int32_t parties;        // per rank
  int32_t party;          // this core's index among its rank's parties
  int64_t first = 0;      // the members: first + i * stride, i in [0, nranks)
  int64_t stride = 1;

  // The credits a party receives in one round: one from every other party.
  PYPTO_DEVICE int32_t credits_per_round() const {
    return static_cast<int32_t>(nranks * parties - 1);
  }
};

// The bytes of one rank's counters of a barrier of `parties` cores per rank.
PYPTO_DEVICE int64_t comm_barrier_bytes(int32_t parties) {
  return static_cast<int64_t>(parties) * static_cast<int64_t>(sizeof(int32_t));
}

// The last comm_barrier_bytes(parties) bytes of window operand `window`, aligned down to an
// int32 (window bases are aligned alike, so the offset is the same on every rank); null when
// they would overlap the first `reserved` bytes of the operand, which the caller keeps for data.
PYPTO_DEVICE __gm__ int32_t* comm_barrier_slots_at_end(__gm__ ChipTensor* window,
                                                       int64_t reserved, int32_t parties) {
  const uint64_t start = reinterpret_cast<uint64_t>(tensor_bytes_data(window));
  const int64_t bytes = tensor_bytes(window);
  const int64_t need = comm_barrier_bytes(parties);
  if (bytes < need) {
    return nullptr;
  }
  const uint64_t slots = (start + static_cast<uint64_t>(bytes - need)) / sizeof(int32_t) *
                         sizeof(int32_t);
  if (slots < start + static_cast<uint64_t>(reserved)) {
    return nullptr;
  }
  return reinterpret_cast<__gm__ int32_t*>(slots);
}

// One round (round = 1, 2, ... within a call); false after a wait ran out (reported).
PYPTO_DEVICE bool comm_barrier_round(const CommBarrier& barrier, int32_t round) {
  const int64_t my_rank = barrier.ctx->rankId;
  publish_fence();
  for (int64_t member = 0; member < barrier.nranks; ++member) {
    const int64_t rank = barrier.first + member * barrier.stride;
    for (int32_t receiver = 0; receiver < barrier.parties; ++receiver) {
      if (rank != my_rank || receiver != barrier.party) {
        signal_add(remote_ptr(barrier.ctx, barrier.slots + receiver, rank), 1);
      }
    }
  }
  return signal_wait_ge(barrier.slots + barrier.party, barrier.credits_per_round() * round);
}

// The epilogue of a call that passed `rounds` rounds: take their credits off this party's
// counter.
PYPTO_DEVICE void comm_barrier_finish(const CommBarrier& barrier, int32_t rounds) {
  signal_add(barrier.slots + barrier.party, -barrier.credits_per_round() * rounds);
}

}  // namespace pypto_build

#endif  // PYPTO_BUILD_MIX_KERNEL_H_
