// Loads one kernel shared object of a built tree the way a host runtime other than pypto-build's
// does (PyPTO's a2a3sim: dlopen with RTLD_LOCAL, nothing of pypto-build's simulation runtime in
// the process) and calls its kernel_entry once, on this thread, as one core of one rank.
//
// Build: g++ -std=c++17 -I<include root> bare_kernel_host.cpp -ldl -o bare_kernel_host
//        With -DPROVIDE_HOOKS -rdynamic the host defines (and exports to the kernel) the two
//        simulation hooks of pypto_build/portability.h instead: errors latch, waits are bounded
//        by HOOK_WAIT_MS and the kernel returns.
//
// argv:   kernel.so nranks rank block_num sub_block tensor...
//         tensor = <w|h>:<DataType code>:<elements>, a 1-D operand in this rank's window (w:
//         every rank gets a zeroed window with the same layout) or in host memory (h, zeroed);
//         args[i] is tensor i, args[#tensors] the rank's CommContext. Every window has
//         kWindowTail zeroed bytes after its operands, as the HOST side of a program calling the
//         MC2 op declares them (its simulated HCCL keeps its state there).
// stdout: "returned" (and, with the hooks, "error <first latched code>") if kernel_entry returns.
// A kernel that fails without the hooks never returns: it traps and the process dies by signal.

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "pypto_build/kernel_abi.h"
#include "pypto_build/mix_kernel.h"

#if defined(PROVIDE_HOOKS)
namespace {
int32_t latched = 0;
}  // namespace

extern "C" void pypto_sim_report_error(int32_t code, const char* message) {
  if (latched == 0) {
    latched = code;
  }
  std::fprintf(stderr, "hook: error %d: %s\n", code, message);
}

extern "C" uint64_t pypto_sim_wait_timeout_ns(void) {
  return static_cast<uint64_t>(HOOK_WAIT_MS) * 1000 * 1000;
}
#endif

namespace {

constexpr size_t kAlign = 64;
// The MC2 contract's window_tail (pypto_build/lowering/contracts/mc2.py).
constexpr size_t kWindowTail = 1024;

struct Operand {
  bool in_window;
  DataType dtype;
  uint32_t elements;
  size_t offset;  // in the window, or in the host buffer
};

size_t round_up(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

Operand parse(const char* text) {
  char where = 0;
  unsigned code = 0;
  unsigned long elements = 0;
  if (std::sscanf(text, "%c:%u:%lu", &where, &code, &elements) != 3 ||
      (where != 'w' && where != 'h')) {
    std::fprintf(stderr, "bad operand '%s' (want <w|h>:<dtype>:<elements>)\n", text);
    std::exit(2);
  }
  return Operand{where == 'w', static_cast<DataType>(code), static_cast<uint32_t>(elements), 0};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s kernel.so nranks rank block_num sub_block tensor...\n",
                 argv[0]);
    return 2;
  }
  void* handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  using Entry = void (*)(int64_t*);
  auto entry = reinterpret_cast<Entry>(dlsym(handle, "kernel_entry"));
  if (entry == nullptr) {
    std::fprintf(stderr, "dlsym kernel_entry: %s\n", dlerror());
    return 2;
  }
  const int nranks = std::atoi(argv[2]);
  const int rank = std::atoi(argv[3]);
  const int block_num = std::atoi(argv[4]);
  const int sub_block = std::atoi(argv[5]);

  std::vector<Operand> operands;
  size_t window_bytes = 0;
  size_t host_bytes = 0;
  for (int i = 6; i < argc; ++i) {
    Operand operand = parse(argv[i]);
    const size_t bytes = round_up(static_cast<size_t>(operand.elements) *
                                  static_cast<size_t>(pypto_build::element_bytes(operand.dtype)));
    size_t& used = operand.in_window ? window_bytes : host_bytes;
    operand.offset = used;
    used += bytes;
    operands.push_back(operand);
  }
  window_bytes += kWindowTail;
  std::vector<unsigned char*> windows(static_cast<size_t>(nranks));
  for (unsigned char*& window : windows) {
    window = static_cast<unsigned char*>(std::aligned_alloc(kAlign, round_up(window_bytes + 1)));
    std::memset(window, 0, round_up(window_bytes + 1));
  }
  auto* host = static_cast<unsigned char*>(std::aligned_alloc(kAlign, round_up(host_bytes + 1)));
  std::memset(host, 0, round_up(host_bytes + 1));

  CommContext ctx{};
  ctx.rankId = static_cast<uint32_t>(rank);
  ctx.rankNum = static_cast<uint32_t>(nranks);
  ctx.winSize = window_bytes;
  for (int peer = 0; peer < nranks; ++peer) {
    ctx.windowsIn[peer] = reinterpret_cast<uint64_t>(windows[static_cast<size_t>(peer)]);
    ctx.windowsOut[peer] = ctx.windowsIn[peer];
  }
  std::vector<ChipTensor> tensors(operands.size());
  std::vector<int64_t> args(KERNEL_MAX_ARGS, 0);
  for (size_t i = 0; i < operands.size(); ++i) {
    const Operand& operand = operands[i];
    unsigned char* base = operand.in_window ? windows[static_cast<size_t>(rank)] : host;
    ChipTensor& tensor = tensors[i];
    tensor = ChipTensor{};
    tensor.buffer.addr = reinterpret_cast<uint64_t>(base + operand.offset);
    tensor.dtype = operand.dtype;
    tensor.ndims = 1;
    tensor.shapes[0] = operand.elements;
    tensor.strides[0] = 1;
    tensor.is_contiguous = true;
    args[i] = reinterpret_cast<int64_t>(&tensor);
  }
  args[operands.size()] = reinterpret_cast<int64_t>(&ctx);
  LocalContext block{0, block_num};
  pypto_build::GlobalContext core{};
  core.sub_block_id = sub_block;
  args[SPMD_LOCAL_CONTEXT_INDEX] = reinterpret_cast<int64_t>(&block);
  args[SPMD_GLOBAL_CONTEXT_INDEX] = reinterpret_cast<int64_t>(&core);

  entry(args.data());
  std::printf("returned\n");
#if defined(PROVIDE_HOOKS)
  std::printf("error %d\n", latched);
#endif
  return 0;
}
