// mark_then_wait: record this rank in a window and in an output, then wait for a credit that
// no rank ever gives -- a pipeline with a protocol bug, which must end as a timeout (code 100)
// that still shows what every rank had written before it.
//
//   args[0] mark [NR] int32   window: mark[0] = rank + 1
//   args[1] flag [NR] int32   window: waited on, never credited
//   args[2] out [NR] int32    out[0] = rank + 1
//   args[3], args[4]          CommContext* of mark and flag (one domain)
#include <cstdint>

#include "pypto_build/portability.h"

extern "C" PYPTO_KERNEL_EXPORT void kernel_entry(__gm__ int64_t* args) {
  const int32_t mine = static_cast<int32_t>(pypto_build::comm_context_arg(args, 3)->rankId) + 1;
  pypto_build::store_i32(pypto_build::tensor_data<int32_t>(pypto_build::tensor_arg(args, 0)), mine);
  pypto_build::store_i32(pypto_build::tensor_data<int32_t>(pypto_build::tensor_arg(args, 2)), mine);
  pypto_build::publish_fence();
  pypto_build::signal_wait_ge(pypto_build::tensor_data<int32_t>(pypto_build::tensor_arg(args, 1)),
                              1);
}
