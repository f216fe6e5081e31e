// wait_forever: wait for a credit that never comes (args[0] is an INT32 slot nobody adds to).
#include <cstdint>

#include "pypto_build/portability.h"

extern "C" PYPTO_KERNEL_EXPORT void kernel_entry(__gm__ int64_t* args) {
  pypto_build::signal_wait_ge(pypto_build::tensor_data<int32_t>(pypto_build::tensor_arg(args, 0)),
                              1 << 30);
}
