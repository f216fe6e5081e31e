// copy_pairs: copy args[0] into args[1] and args[2] into args[3], element by element.
//
// The staging and draining kernel of the simulator's test programs: it moves host data into
// window buffers before a collective and window contents out to host tensors after it. Shapes,
// strides and the element size come from the descriptors, so one source serves every payload
// type and every program size. Each pair's tensors have the same shape (rank 1 or 2); the
// launch's blocks split the rows.
#include <cstdint>

#include "pypto_build/kernel_abi.h"

namespace {

uint32_t element_bytes(DataType dtype) {
  switch (dtype) {
    case DataType::INT8:
    case DataType::UINT8:
    case DataType::BOOL:
      return 1;
    case DataType::FLOAT16:
    case DataType::BFLOAT16:
    case DataType::INT16:
    case DataType::UINT16:
      return 2;
    case DataType::INT64:
    case DataType::UINT64:
      return 8;
    default:
      return 4;
  }
}

__gm__ uint8_t* element(__gm__ ChipTensor* tensor, uint32_t row, uint32_t col, uint32_t bytes) {
  const uint64_t index = tensor->start_offset + static_cast<uint64_t>(row) * tensor->strides[0] +
                         (tensor->ndims > 1 ? static_cast<uint64_t>(col) * tensor->strides[1] : 0);
  return reinterpret_cast<__gm__ uint8_t*>(tensor->buffer.addr) + index * bytes;
}

void copy(__gm__ ChipTensor* src, __gm__ ChipTensor* dst, uint32_t block, uint32_t blocks) {
  const uint32_t bytes = element_bytes(src->dtype);
  const uint32_t rows = src->shapes[0];
  const uint32_t cols = src->ndims > 1 ? src->shapes[1] : 1;
  for (uint32_t row = block; row < rows; row += blocks) {
    for (uint32_t col = 0; col < cols; ++col) {
      __gm__ uint8_t* from = element(src, row, col, bytes);
      __gm__ uint8_t* to = element(dst, row, col, bytes);
      for (uint32_t byte = 0; byte < bytes; ++byte) {
        to[byte] = from[byte];
      }
    }
  }
}

}  // namespace

extern "C" __aicore__ void kernel_entry(__gm__ int64_t* args) {
  const uint32_t block = static_cast<uint32_t>(get_block_idx(args));
  const uint32_t blocks = static_cast<uint32_t>(get_block_num(args));
  copy(reinterpret_cast<__gm__ ChipTensor*>(args[0]), reinterpret_cast<__gm__ ChipTensor*>(args[1]),
       block, blocks);
  copy(reinterpret_cast<__gm__ ChipTensor*>(args[2]), reinterpret_cast<__gm__ ChipTensor*>(args[3]),
       block, blocks);
}
