// scale (tests/programs/side_effects.py): write a scaled copy of x into y, y = 2 * x.
//
//   args[0] x [WIDTH] float
//   args[1] y [WIDTH] float (output)
#include <cstdint>

#include "pypto_build/kernel_abi.h"

extern "C" __aicore__ void kernel_entry(__gm__ int64_t* args) {
  __gm__ ChipTensor* x = reinterpret_cast<__gm__ ChipTensor*>(args[0]);
  __gm__ ChipTensor* y = reinterpret_cast<__gm__ ChipTensor*>(args[1]);
  __gm__ float* in = reinterpret_cast<__gm__ float*>(x->buffer.addr) + x->start_offset;
  __gm__ float* out = reinterpret_cast<__gm__ float*>(y->buffer.addr) + y->start_offset;
  const uint32_t blocks = static_cast<uint32_t>(get_block_num(args));
  for (uint32_t i = static_cast<uint32_t>(get_block_idx(args)); i < x->shapes[0]; i += blocks) {
    out[i * y->strides[0]] = 2.0f * in[i * x->strides[0]];
  }
}
