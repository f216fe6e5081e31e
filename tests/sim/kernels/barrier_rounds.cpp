// barrier_rounds: ROUNDS rounds of "write my slot, comm_barrier, read every rank's slot,
// comm_barrier" on one AIV block per rank -- correct only if the barrier holds every rank back
// until all have written (first barrier) and until all have read (second one).
//
//   args[0] mode [1] int32       0: take part; 1: return before the first barrier;
//                                2: arrive counting 2 parties per rank instead of 1
//   args[1] slots [1] int32      window: this rank's value of the round
//   args[2] seen [ROUNDS, NR]    round r, every rank's value: (r + 1) * 100 + rank
//   args[3] CommContext*         of slots
#include <cstdint>

#include "pypto_build/mix_kernel.h"

namespace {

constexpr int32_t kRounds = 3;

}  // namespace

extern "C" PYPTO_KERNEL_EXPORT void kernel_entry(__gm__ int64_t* args) {
  const int32_t mode = pypto_build::load_i32(
      pypto_build::tensor_data<int32_t>(pypto_build::tensor_arg(args, 0)));
  __gm__ int32_t* slot = pypto_build::tensor_data<int32_t>(pypto_build::tensor_arg(args, 1));
  __gm__ int32_t* seen = pypto_build::tensor_data<int32_t>(pypto_build::tensor_arg(args, 2));
  __gm__ CommContext* ctx = pypto_build::comm_context_arg(args, 3);
  if (mode == 1) {
    return;
  }
  const int32_t parties = mode == 2 ? 2 : 1;
  const int32_t nranks = static_cast<int32_t>(ctx->rankNum);
  for (int32_t round = 0; round < kRounds; ++round) {
    pypto_build::store_i32(slot, (round + 1) * 100 + static_cast<int32_t>(ctx->rankId));
    pypto_build::publish_fence();
    if (!pypto_build::comm_barrier(ctx, parties)) {
      return;
    }
    for (int32_t peer = 0; peer < nranks; ++peer) {
      const int32_t value = pypto_build::remote_load_i32(pypto_build::remote_ptr(ctx, slot, peer));
      pypto_build::store_i32(seen + round * nranks + peer, value);
    }
    if (!pypto_build::comm_barrier(ctx, parties)) {
      return;
    }
  }
}
