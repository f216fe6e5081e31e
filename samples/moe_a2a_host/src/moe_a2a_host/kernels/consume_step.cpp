// consume_step: AIV kernel of MoeDispatchHost.consume_chip (one block), dispatched to every rank.
//
// Copies the rows all_to_all_v delivered into this rank's window out to a local tensor, slot by
// slot, and zero-fills each slot past its received count so `out` never exposes stale window
// contents (a reused window keeps whatever an earlier exchange left there).
//
//   args[0] data        [NR*MAX_RECV, HIDDEN] fp32   In   window: rows from rank s at s*MAX_RECV
//   args[1] recv_counts [NR, 1]               int32  In   window: rows received from each rank
//   args[2] out         [NR*MAX_RECV, HIDDEN] fp32   Out
//   args[3] recv_out    [NR, 1]               int32  Out
//   args[4..5]          CommContext* of data and recv_counts (appended by the build; unused)
//
// Tensor slots hold pointers to the runtime's tensor descriptor (ChipTensor), see stage_step.cpp.

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
  __gm__ Tensor* data = tensor_arg(args, 0);
  __gm__ Tensor* recv_counts = tensor_arg(args, 1);
  __gm__ Tensor* out = tensor_arg(args, 2);
  __gm__ Tensor* recv_out = tensor_arg(args, 3);

  const int64_t ranks = recv_counts->shapes[0];
  const int64_t rows = data->shapes[0];
  const int64_t hidden = data->shapes[1];
  if (ranks <= 0 || rows % ranks != 0) return;
  const int64_t max_recv = rows / ranks;

  __gm__ const float* src = tensor_data<float>(data);
  __gm__ const int32_t* received = tensor_data<int32_t>(recv_counts);
  __gm__ float* dst = tensor_data<float>(out);
  __gm__ int32_t* counted = tensor_data<int32_t>(recv_out);

  for (int64_t s = 0; s < ranks; ++s) {
    const int64_t n = clamp_rows(received[s * recv_counts->strides[0]], max_recv);
    for (int64_t k = 0; k < max_recv; ++k) {
      const int64_t row = s * max_recv + k;
      for (int64_t j = 0; j < hidden; ++j) {
        dst[row * out->strides[0] + j * out->strides[1]] =
            k < n ? src[row * data->strides[0] + j * data->strides[1]] : 0.0f;
      }
    }
    counted[s * recv_out->strides[0]] = static_cast<int32_t>(n);
  }
}
