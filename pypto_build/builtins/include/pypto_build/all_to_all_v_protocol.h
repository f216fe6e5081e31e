// pypto_build/all_to_all_v_protocol.h -- geometry, credit barrier and count pull shared by the
// all_to_all_v family of builtin kernels (all_to_all_v, indexed_all_to_all_v).
//
// Geometry. MAX_RECV = target rows / NR and the row size come from the target descriptor, the
// lane count S from the signal ([NR, S]; rank 1 means S = 1), NR and this rank from the
// CommContext. Every input of a guard is the same on every rank (symmetric windows, one launch
// width), so a guard that fails fails everywhere and the early return leaves no peer waiting.
//
// Credit barrier. Active block b of rank r owns lane b: it adds credits to slot (r, b) of every
// peer's signal and waits on slots (p, b) of its own, for every peer p != r; self slots are never
// used. A call runs two rounds on every lane and never resets a slot:
//   Barrier A  +1 on every peer, wait until every local peer slot >= 1. Every peer has entered
//              this call: it is done consuming the previous call's receive window and has staged
//              this call's send_counts.
//   (pull counts, push payload, publish_fence)
//   Barrier B  +1 on every peer, wait until every local peer slot >= 2. Every peer has published
//              its payload to this rank and finished reading this rank's send_counts.
//   Epilogue   -2 on every local peer slot.
// A peer may finish the call and add the first credit of its next call before this rank's
// epilogue (the slot holds 3 and drops to 1), never more: its next Barrier A waits for this
// rank's next credit. Taking off exactly this call's credits keeps that early credit; after a
// call every used lane is 0 again. A rank's task completes only when all its blocks have passed
// Barrier B, so lane-by-lane waits order every push of every peer block before completion.
//
// A wait that times out (simulation only) has already reported the error; callers return at
// once.

#ifndef PYPTO_BUILD_ALL_TO_ALL_V_PROTOCOL_H_
#define PYPTO_BUILD_ALL_TO_ALL_V_PROTOCOL_H_

#include <cstdint>

#include "pypto_build/portability.h"

namespace pypto_build {

// Credits one call leaves on each used slot, taken off by the epilogue.
constexpr int32_t kCreditsPerCall = 2;

PYPTO_DEVICE int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// clamp(raw, 0, max_recv), computed in 64 bits: the rows a count stands for.
PYPTO_DEVICE int64_t clamp_count(int32_t raw, int64_t max_recv) {
  const int64_t count = raw;
  return count < 0 ? 0 : min64(count, max_recv);
}

// The ranks of the comm domain as this rank sees them.
struct Domain {
  __gm__ CommContext* ctx;
  int64_t nranks;
  int64_t my_rank;
};

// Launch and buffer geometry of one block, identical on every rank.
struct ExchangeGeometry {
  Domain domain;
  int64_t block_idx;
  int64_t active_blocks;  // min(launch width, S): the blocks that own a lane
  int64_t lanes;          // S
  int64_t max_recv;       // rows of one rank's slot in target
  int64_t row_numel;      // elements of one target row
};

// False when this block has nothing to do: a degenerate domain or launch, a block without a
// lane, or a target too small for one row per rank.
PYPTO_DEVICE bool derive_geometry(__gm__ int64_t* args, __gm__ CommContext* ctx,
                                  __gm__ ChipTensor* target, __gm__ ChipTensor* signal,
                                  ExchangeGeometry* geometry) {
  const int64_t nranks = ctx->rankNum;
  const int64_t my_rank = ctx->rankId;
  if (nranks < 1 || nranks > COMM_MAX_RANK_NUM || my_rank >= nranks) {
    return false;
  }
  const int64_t block_idx = get_block_idx(args);
  const int64_t block_num = get_block_num(args);
  if (block_num < 1 || block_idx < 0 || block_idx >= block_num) {
    return false;
  }
  const int64_t lanes = signal->ndims == 1 ? 1 : static_cast<int64_t>(signal->shapes[1]);
  if (static_cast<int64_t>(signal->shapes[0]) < nranks) {
    return false;
  }
  const int64_t active_blocks = min64(block_num, lanes);
  if (block_idx >= active_blocks) {
    return false;
  }
  const int64_t max_recv = static_cast<int64_t>(target->shapes[0]) / nranks;
  const int64_t row_numel = tensor_row_numel(target);
  if (max_recv <= 0 || row_numel <= 0) {
    return false;
  }
  *geometry = ExchangeGeometry{Domain{ctx, nranks, my_rank}, block_idx, active_blocks, lanes,
                               max_recv, row_numel};
  return true;
}

// One block's lane of the signal.
struct CreditLane {
  Domain domain;
  __gm__ int32_t* signal;  // element (0, 0) of the signal tensor
  int64_t lanes;
  int64_t lane;

  // The local slot that rank `peer` adds its credits to.
  PYPTO_DEVICE __gm__ int32_t* slot_from(int64_t peer) const {
    return signal + peer * lanes + lane;
  }
};

PYPTO_DEVICE CreditLane credit_lane(const ExchangeGeometry& geometry, __gm__ int32_t* signal) {
  return CreditLane{geometry.domain, signal, geometry.lanes, geometry.block_idx};
}

// Add `credit` to this rank's slot on every peer.
PYPTO_DEVICE void send_credit(const CreditLane& lane, int32_t credit) {
  const Domain& domain = lane.domain;
  for (int64_t peer = 0; peer < domain.nranks; ++peer) {
    if (peer != domain.my_rank) {
      signal_add(remote_ptr(domain.ctx, lane.slot_from(domain.my_rank), peer), credit);
    }
  }
}

// Wait until every local peer slot holds at least `threshold`.
PYPTO_DEVICE bool wait_credits(const CreditLane& lane, int32_t threshold) {
  for (int64_t peer = 0; peer < lane.domain.nranks; ++peer) {
    if (peer != lane.domain.my_rank && !signal_wait_ge(lane.slot_from(peer), threshold)) {
      return false;
    }
  }
  return true;
}

// Take `credits` off every local peer slot (the epilogue).
PYPTO_DEVICE void drop_credits(const CreditLane& lane, int32_t credits) {
  for (int64_t peer = 0; peer < lane.domain.nranks; ++peer) {
    if (peer != lane.domain.my_rank) {
      signal_add(lane.slot_from(peer), -credits);
    }
  }
}

// recv_counts[src] = clamp(send_counts[my_rank] of rank src, 0, max_recv) for every source, this
// rank included: one remote scalar load per source. Runs after Barrier A (the sources have
// staged their counts) and before Barrier B (they keep them until every rank has pulled).
PYPTO_DEVICE void pull_recv_counts(const Domain& domain, __gm__ int32_t* send_counts,
                                   __gm__ int32_t* recv_counts, int64_t max_recv) {
  __gm__ int32_t* mine = send_counts + domain.my_rank;
  for (int64_t src = 0; src < domain.nranks; ++src) {
    const int32_t raw = remote_load_i32(remote_ptr(domain.ctx, mine, src));
    store_i32(recv_counts + src, static_cast<int32_t>(clamp_count(raw, max_recv)));
  }
}

}  // namespace pypto_build

#endif  // PYPTO_BUILD_ALL_TO_ALL_V_PROTOCOL_H_
