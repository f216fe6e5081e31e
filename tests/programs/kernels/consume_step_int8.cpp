// consume_step, INT8 payload (tests/programs/host_rail_int8.py): copy the received rows to the
// output.
//
//   args[0] data [NR*MAX_RECV, W] int8    window: slot s holds the rows rank s sent
//   args[1] recv [NR, 1] int32            rows received from each rank
//   args[2] out [NR*MAX_RECV, W] int8     output: slot s = the first recv[s] rows of data's
//                                         slot s, then zeros
//   args[3], args[4]                      CommContext* of data and recv (one domain)
//
// Only rows below the count are trusted (a reused window holds stale rows past it); the launch's
// blocks split the rows.
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
  __gm__ ChipTensor* data = reinterpret_cast<__gm__ ChipTensor*>(args[0]);
  __gm__ ChipTensor* recv = reinterpret_cast<__gm__ ChipTensor*>(args[1]);
  __gm__ ChipTensor* out = reinterpret_cast<__gm__ ChipTensor*>(args[2]);
  const uint32_t rows = data->shapes[0];
  const uint32_t width = data->shapes[1];
  const uint32_t max_recv = rows / recv->shapes[0];
  const uint32_t blocks = static_cast<uint32_t>(get_block_num(args));
  for (uint32_t row = static_cast<uint32_t>(get_block_idx(args)); row < rows; row += blocks) {
    const int32_t count = *element<int32_t>(recv, row / max_recv, 0);
    const bool valid = static_cast<int32_t>(row % max_recv) < count;
    for (uint32_t col = 0; col < width; ++col) {
      *element<Elem>(out, row, col) = valid ? *element<Elem>(data, row, col) : Elem{0};
    }
  }
}
