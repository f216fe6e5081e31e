// barrier_rounds: one call runs ROUNDS rounds of "write my slot, barrier round, read every rank's
// slot, barrier round" on one AIV block per rank, through pypto_build/mix_kernel.h's
// CommBarrier (one party per rank) -- correct only if every round holds every rank back until
// all have written (the first round of a pair) and until all have read (the second).
//
//   args[0] mode [1] int32       0: take part; 1: return before the first round
//   args[1] slots [1] int32      window: this rank's value of the round
//   args[2] barrier [1] int32    window: the barrier's counter (zero before the first call, and
//                                after every call: the epilogue takes the call's credits off)
//   args[3] seen [ROUNDS, NR]    round r, every rank's value: (r + 1) * 100 + rank
//   args[4] CommContext*         of the windows
#include <cstdint>

#include "pypto_build/mix_kernel.h"

namespace {

constexpr int32_t kRounds = 3;

}  // namespace

extern "C" PYPTO_KERNEL_EXPORT void kernel_entry(__gm__ int64_t* args) {
  const int32_t mode = pypto_build::load_i32(
      pypto_build::tensor_data<int32_t>(pypto_build::tensor_arg(args, 0)));
  __gm__ int32_t* slot = pypto_build::tensor_data<int32_t>(pypto_build::tensor_arg(args, 1));
  __gm__ int32_t* counter = pypto_build::tensor_data<int32_t>(pypto_build::tensor_arg(args, 2));
  __gm__ int32_t* seen = pypto_build::tensor_data<int32_t>(pypto_build::tensor_arg(args, 3));
  __gm__ CommContext* ctx = pypto_build::comm_context_arg(args, 4);
  if (mode == 1) {
    return;
  }
  const int64_t nranks = ctx->rankNum;
  const pypto_build::CommBarrier barrier{ctx, counter, nranks, 1, 0};
  for (int32_t round = 0; round < kRounds; ++round) {
    pypto_build::store_i32(slot, (round + 1) * 100 + static_cast<int32_t>(ctx->rankId));
    if (!pypto_build::comm_barrier_round(barrier, 2 * round + 1)) {
      return;
    }
    for (int64_t peer = 0; peer < nranks; ++peer) {
      const int32_t value = pypto_build::remote_load_i32(pypto_build::remote_ptr(ctx, slot, peer));
      pypto_build::store_i32(seen + round * nranks + peer, value);
    }
    if (!pypto_build::comm_barrier_round(barrier, 2 * round + 2)) {
      return;
    }
  }
  pypto_build::comm_barrier_finish(barrier, 2 * kRounds);
}
