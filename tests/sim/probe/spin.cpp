// spin: compute for args[0] milliseconds without ever waiting on a signal.
#include <chrono>
#include <cstdint>

extern "C" void kernel_entry(int64_t* args) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(args[0]);
  while (std::chrono::steady_clock::now() < until) {
  }
}
