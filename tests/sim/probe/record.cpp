// record: block b of a launch of B blocks writes {b, B} into row b of args[0] (INT32 [B, 2]);
// with args[1] nonzero, block 1 reports an error instead.
#include <cstdint>

#include "pypto_build/portability.h"

extern "C" PYPTO_KERNEL_EXPORT void kernel_entry(__gm__ int64_t* args) {
  __gm__ ChipTensor* out = pypto_build::tensor_arg(args, 0);
  const int32_t block = get_block_idx(args);
  if (args[1] != 0 && block == 1) {
    pypto_build::report_error(9, "block one refuses");
    return;
  }
  __gm__ int32_t* row = pypto_build::tensor_data<int32_t>(out) + block * out->strides[0];
  row[0] = block;
  row[1] = get_block_num(args);
}
