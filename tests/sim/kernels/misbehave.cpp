// misbehave: what no kernel on a device can do, chosen per rank, for the tests that the
// simulator's caller survives whatever a kernel does (tests/sim/test_isolation.py).
//
//   args[0] mode [1] int32   0 behave; 1 dereference null; 2 abort(); 3 throw std::runtime_error;
//                            4 exit(7); 5 spin forever, outside any signal wait; 6 overflow the
//                            stack; 7 fork, the parent _exit(0)s, the copy goes on; 8 raise(SIGSTOP);
//                            9 close every descriptor; 10 fork, both go on
//   args[1] out [1] int32    1 once the kernel has started (written first, whatever the mode)
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#include <unistd.h>

#include "pypto_build/portability.h"

namespace {

// Never inlined or turned into a loop: each frame keeps a page of its own alive.
__attribute__((noinline)) int32_t recurse(int32_t depth) {
  volatile char page[4096];
  page[0] = static_cast<char>(depth);
  return recurse(depth + 1) + page[0];
}

}  // namespace

extern "C" PYPTO_KERNEL_EXPORT void kernel_entry(__gm__ int64_t* args) {
  const int32_t mode = pypto_build::load_i32(
      pypto_build::tensor_data<int32_t>(pypto_build::tensor_arg(args, 0)));
  pypto_build::store_i32(pypto_build::tensor_data<int32_t>(pypto_build::tensor_arg(args, 1)), 1);
  pypto_build::publish_fence();
  volatile int32_t* volatile nowhere = nullptr;
  volatile uint64_t turns = 0;
  switch (mode) {
    case 1:
      *nowhere = 1;
      break;
    case 2:
      std::abort();
    case 3:
      throw std::runtime_error("the kernel gave up");
    case 4:
      std::exit(7);
    case 5:
      for (;;) {
        turns = turns + 1;
      }
    case 6:
      pypto_build::store_i32(pypto_build::tensor_data<int32_t>(pypto_build::tensor_arg(args, 1)),
                             recurse(0));
      break;
    case 7:
      if (fork() != 0) {
        _exit(0);
      }
      break;
    case 8:
      std::raise(SIGSTOP);
      break;
    case 9:
      for (int fd = 0; fd < 65536; ++fd) {
        close(fd);
      }
      break;
    case 10:
      fork();
      break;
    default:
      break;
  }
}
