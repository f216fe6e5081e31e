// stage_step, INT8 payload (tests/programs/host_rail_int8.py): stage this rank's rows and its send
// counts.
//
//   args[0] inp [NR*MAX_RECV, W] int8      this rank's rows; block d is for destination d
//   args[1] stage [NR*MAX_RECV, W] int8    window: the collective's input
//   args[2] counts [NR] int32              window: rows for each destination
//   args[3], args[4]                       CommContext* of stage and counts (one domain)
//
// Rows are copied whole; the launch's blocks split them. The counts are a pure function of the
// ranks, so a test can predict them: counts[d] = (rank + d) % (MAX_RECV + 1), which sends every
// count from 0 to MAX_RECV somewhere.
#include <cstdint>

#include "pypto_build/kernel_abi.h"

namespace {

using Elem = int8_t;

template <typename T>
__gm__ T* element(__gm__ ChipTensor* tensor, uint32_t row, uint32_t col) {
  return reinterpret_cast<__gm__ T*>(tensor->buffer.addr) + tensor->start_offset +
         row * tensor->strides[0] + col * tensor->strides[1];
}

}  // namespace

extern "C" __aicore__ void kernel_entry(__gm__ int64_t* args) {
  __gm__ ChipTensor* inp = reinterpret_cast<__gm__ ChipTensor*>(args[0]);
  __gm__ ChipTensor* stage = reinterpret_cast<__gm__ ChipTensor*>(args[1]);
  __gm__ ChipTensor* counts = reinterpret_cast<__gm__ ChipTensor*>(args[2]);
  __gm__ CommContext* ctx = reinterpret_cast<__gm__ CommContext*>(args[4]);
  const uint32_t rows = inp->shapes[0];
  const uint32_t width = inp->shapes[1];
  const uint32_t blocks = static_cast<uint32_t>(get_block_num(args));
  const uint32_t block = static_cast<uint32_t>(get_block_idx(args));
  for (uint32_t row = block; row < rows; row += blocks) {
    for (uint32_t col = 0; col < width; ++col) {
      *element<Elem>(stage, row, col) = *element<Elem>(inp, row, col);
    }
  }
  if (block == 0) {
    const uint32_t nranks = counts->shapes[0];
    const uint32_t max_recv = rows / nranks;
    for (uint32_t dest = 0; dest < nranks; ++dest) {
      *element<int32_t>(counts, dest, 0) =
          static_cast<int32_t>((ctx->rankId + dest) % (max_recv + 1));
    }
  }
}
