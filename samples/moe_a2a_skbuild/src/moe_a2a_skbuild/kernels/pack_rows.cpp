// pack_rows: the one hand-written AIV kernel of QuantDispatch.quant_exchange (one block).
//
// Packs this rank's routed INT8 token rows into the staging window that all_to_all_v reads and
// publishes the row counts it sends to each rank.
//
//   args[0] tokens      [NR*MAX_RECV, HIDDEN] int8   In     block d holds the rows for rank d
//   args[1] counts      [NR]                  int32  In     rows routed to each rank
//   args[2] stage       [NR*MAX_RECV, HIDDEN] int8   InOut  window: the exchange's input
//   args[3] send_counts [NR]                  int32  InOut  window: the exchange's send counts
//   args[4..5]          CommContext* of stage and send_counts (appended by the build; unused)
//
// Only the first min(counts[d], MAX_RECV) rows of each block move (all_to_all_v clamps the same
// way and reads no further), each row as one contiguous put. A row with a non-unit column
// stride is refused with SIMPLER_ERROR_INVALID_ARGS rather than packed wrongly.

#include <cstdint>

#include "pypto_build/portability.h"

namespace pb = pypto_build;

extern "C" PYPTO_KERNEL_EXPORT void kernel_entry(__gm__ int64_t* args) {
  __gm__ ChipTensor* tokens = pb::tensor_arg(args, 0);
  __gm__ ChipTensor* counts = pb::tensor_arg(args, 1);
  __gm__ ChipTensor* stage = pb::tensor_arg(args, 2);
  __gm__ ChipTensor* send_counts = pb::tensor_arg(args, 3);

  if (tokens->strides[1] != 1 || stage->strides[1] != 1) {
    pb::report_error(SIMPLER_ERROR_INVALID_ARGS, "pack_rows: token rows must be contiguous");
    return;
  }
  const int64_t ranks = counts->shapes[0];
  const int64_t hidden = pb::tensor_row_numel(tokens);
  const int64_t max_recv = ranks > 0 ? tokens->shapes[0] / ranks : 0;

  __gm__ const int8_t* src = pb::tensor_data<int8_t>(tokens);
  __gm__ const int32_t* routed = pb::tensor_data<int32_t>(counts);
  __gm__ int8_t* dst = pb::tensor_data<int8_t>(stage);
  __gm__ int32_t* published = pb::tensor_data<int32_t>(send_counts);

  for (int64_t d = 0; d < ranks; ++d) {
    const int32_t count = routed[d * counts->strides[0]];
    const int64_t rows = count < 0 ? 0 : (count < max_recv ? count : max_recv);
    for (int64_t k = 0; k < rows; ++k) {
      const int64_t row = d * max_recv + k;
      pb::put<int8_t>(dst + row * stage->strides[0], src + row * tokens->strides[0], hidden);
    }
    pb::store_i32(published + d * send_counts->strides[0], count);
  }
  pb::publish_fence();
}
