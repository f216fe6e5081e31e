// stage_step: AIV kernel of MoeDispatchHost.stage_chip (one block), dispatched to every rank.
//
// Copies this rank's routed token rows into the staging window that all_to_all_v reads, and
// publishes how many rows go to each destination rank.
//
//   args[0] tokens      [NR*MAX_RECV, HIDDEN] fp32   In     rows for rank d start at d*MAX_RECV
//   args[1] counts      [NR]                  int32  In     rows routed to each rank
//   args[2] stage       [NR*MAX_RECV, HIDDEN] fp32   InOut  window: the exchange's input
//   args[3] send_counts [NR]                  int32  InOut  window: the exchange's send counts
//   args[4..5]          CommContext* of stage and send_counts (appended by the build; unused)
//
// Every tensor slot holds a pointer to the runtime's tensor descriptor (ChipTensor, alias
// Tensor); element (i, j) lives at buffer.addr + (start_offset + i*strides[0] + j*strides[1])
// elements. Only the first min(counts[d], MAX_RECV) rows of each destination block are copied:
// all_to_all_v clamps the count the same way and never reads past it.

#include <cstdint>

#include "pypto_build/portability.h"

using pypto_build::tensor_arg;
using pypto_build::tensor_data;

namespace {

PYPTO_DEVICE int64_t clamp_rows(int64_t count, int64_t capacity) {
  if (count < 0) return 0;
  return count < capacity ? count : capacity;
}

}  // namespace

extern "C" __aicore__ void kernel_entry(__gm__ int64_t* args) {
  __gm__ Tensor* tokens = tensor_arg(args, 0);
  __gm__ Tensor* counts = tensor_arg(args, 1);
  __gm__ Tensor* stage = tensor_arg(args, 2);
  __gm__ Tensor* send_counts = tensor_arg(args, 3);

  const int64_t ranks = counts->shapes[0];
  const int64_t rows = tokens->shapes[0];
  const int64_t hidden = tokens->shapes[1];
  if (ranks <= 0 || rows % ranks != 0) return;
  const int64_t max_recv = rows / ranks;

  __gm__ const float* src = tensor_data<float>(tokens);
  __gm__ const int32_t* routed = tensor_data<int32_t>(counts);
  __gm__ float* dst = tensor_data<float>(stage);
  __gm__ int32_t* published = tensor_data<int32_t>(send_counts);

  for (int64_t d = 0; d < ranks; ++d) {
    const int32_t count = routed[d * counts->strides[0]];
    const int64_t n = clamp_rows(count, max_recv);
    for (int64_t k = 0; k < n; ++k) {
      const int64_t row = d * max_recv + k;
      for (int64_t j = 0; j < hidden; ++j) {
        dst[row * stage->strides[0] + j * stage->strides[1]] =
            src[row * tokens->strides[0] + j * tokens->strides[1]];
      }
    }
    published[d * send_counts->strides[0]] = count;
  }
}
