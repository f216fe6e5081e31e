// Runs one rendered all_to_all_v-family kernel on P simulated ranks, the way the host simulation
// runtime does: every rank's window is host memory, its CommContext lists every rank's window
// base, and every block of every rank is a thread that calls kernel_entry(args) with the block
// identity in args[SPMD_LOCAL_CONTEXT_INDEX]. It implements the portability header's two
// simulation hooks and latches the first error code per rank.
//
// Build: g++ -std=c++17 -pthread -DPAYLOAD_T=<float|int8_t> -DINDEXED=<0|1> -I<include root>
//        kernel_harness.cpp <rendered kernel.cpp>
//
// stdin:  nranks block_num lanes max_recv width input_rows rounds timeout_ms skip_rank
//         (lanes 0 means a rank-1 signal [NR]; skip_rank -1 runs every rank)
//         then per round and rank: send_counts[NR], input[input_rows * width],
//         and for INDEXED index[NR * max_recv]
// stdout: per round and rank the lines "error <code>", "recv <NR ints>",
//         "target <NR*max_recv*width ints>", "signal <NR*S ints>"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <iostream>
#include <thread>
#include <vector>

#include "pypto_build/kernel_abi.h"

extern "C" void kernel_entry(int64_t* args);

namespace {

using Payload = PAYLOAD_T;

constexpr int kTensorCount = INDEXED ? 6 : 5;

thread_local int current_rank = -1;
std::vector<std::atomic<int32_t>>* rank_errors = nullptr;
uint64_t wait_timeout_ns = 0;

struct Scenario {
  int nranks, block_num, lanes, max_recv, width, input_rows, rounds;
  long long timeout_ms;
  int skip_rank;
};

ChipTensor describe(void* data, DataType dtype, std::initializer_list<uint32_t> shape) {
  ChipTensor tensor{};
  tensor.buffer.addr = reinterpret_cast<uint64_t>(data);
  tensor.ndims = static_cast<uint32_t>(shape.size());
  tensor.dtype = dtype;
  tensor.is_contiguous = true;
  uint32_t dim = 0;
  for (uint32_t extent : shape) {
    tensor.shapes[dim++] = extent;
  }
  uint32_t stride = 1;
  for (uint32_t d = tensor.ndims; d-- > 0;) {
    tensor.strides[d] = stride;
    stride *= tensor.shapes[d];
  }
  return tensor;
}

size_t round_up(size_t bytes) { return (bytes + 63) / 64 * 64; }

template <typename T>
std::vector<T> read_values(size_t count) {
  std::vector<T> values(count);
  for (T& value : values) {
    long long raw = 0;
    std::cin >> raw;
    value = static_cast<T>(raw);
  }
  return values;
}

template <typename T>
void print_values(const char* label, const T* values, size_t count) {
  std::printf("%s", label);
  for (size_t i = 0; i < count; ++i) {
    std::printf(" %lld", static_cast<long long>(values[i]));
  }
  std::printf("\n");
}

}  // namespace

extern "C" void pypto_sim_report_error(int32_t code, const char* message) {
  int32_t none = 0;
  (*rank_errors)[current_rank].compare_exchange_strong(none, code);
  std::fprintf(stderr, "rank %d: error %d: %s\n", current_rank, code, message);
}

extern "C" uint64_t pypto_sim_wait_timeout_ns(void) { return wait_timeout_ns; }

int main() {
  Scenario s{};
  std::cin >> s.nranks >> s.block_num >> s.lanes >> s.max_recv >> s.width >> s.input_rows >>
      s.rounds >> s.timeout_ms >> s.skip_rank;
  const int P = s.nranks;
  const int S = s.lanes == 0 ? 1 : s.lanes;
  const size_t target_elems = static_cast<size_t>(P) * s.max_recv * s.width;
  const size_t target_bytes = round_up(target_elems * sizeof(Payload));
  const size_t signal_bytes = round_up(static_cast<size_t>(P) * S * sizeof(int32_t));
  const size_t window_bytes = target_bytes + signal_bytes + round_up(P * sizeof(int32_t));
  wait_timeout_ns = static_cast<uint64_t>(s.timeout_ms) * 1000000u;

  std::vector<unsigned char*> windows(P);
  std::vector<CommContext> contexts(P);
  std::vector<std::vector<int32_t>> recv_counts(P, std::vector<int32_t>(P, 0));
  for (int r = 0; r < P; ++r) {
    windows[r] = static_cast<unsigned char*>(std::aligned_alloc(64, window_bytes));
    std::fill(windows[r], windows[r] + window_bytes, 0);
  }
  for (int r = 0; r < P; ++r) {
    contexts[r] = CommContext{};
    contexts[r].rankId = static_cast<uint32_t>(r);
    contexts[r].rankNum = static_cast<uint32_t>(P);
    contexts[r].winSize = window_bytes;
    for (int peer = 0; peer < P; ++peer) {
      contexts[r].windowsIn[peer] = reinterpret_cast<uint64_t>(windows[peer]);
      contexts[r].windowsOut[peer] = reinterpret_cast<uint64_t>(windows[peer]);
    }
  }
  auto target_of = [&](int r) { return reinterpret_cast<Payload*>(windows[r]); };
  auto signal_of = [&](int r) { return reinterpret_cast<int32_t*>(windows[r] + target_bytes); };
  auto send_counts_of = [&](int r) {
    return reinterpret_cast<int32_t*>(windows[r] + target_bytes + signal_bytes);
  };
  const DataType payload_dtype =
      sizeof(Payload) == 4 ? DataType::FLOAT32 : DataType::INT8;

  for (int round = 0; round < s.rounds; ++round) {
    std::vector<std::vector<Payload>> inputs(P);
    std::vector<std::vector<int32_t>> indexes(P);
    for (int r = 0; r < P; ++r) {
      const std::vector<int32_t> counts = read_values<int32_t>(P);
      std::copy(counts.begin(), counts.end(), send_counts_of(r));
      inputs[r] = read_values<Payload>(static_cast<size_t>(s.input_rows) * s.width);
      if (INDEXED) {
        indexes[r] = read_values<int32_t>(static_cast<size_t>(P) * s.max_recv);
      }
    }
    std::vector<std::vector<ChipTensor>> tensors(P);
    for (int r = 0; r < P; ++r) {
      const uint32_t rows = static_cast<uint32_t>(P * s.max_recv);
      tensors[r] = {
          describe(inputs[r].data(), payload_dtype,
                   {static_cast<uint32_t>(s.input_rows), static_cast<uint32_t>(s.width)}),
          describe(target_of(r), payload_dtype, {rows, static_cast<uint32_t>(s.width)}),
          s.lanes == 0 ? describe(signal_of(r), DataType::INT32, {static_cast<uint32_t>(P)})
                       : describe(signal_of(r), DataType::INT32,
                                  {static_cast<uint32_t>(P), static_cast<uint32_t>(S)}),
          describe(send_counts_of(r), DataType::INT32, {static_cast<uint32_t>(P)}),
          describe(recv_counts[r].data(), DataType::INT32, {static_cast<uint32_t>(P), 1}),
      };
      if (INDEXED) {
        tensors[r].push_back(describe(indexes[r].data(), DataType::INT32, {rows}));
      }
    }
    std::vector<std::atomic<int32_t>> errors(P);
    rank_errors = &errors;
    std::vector<LocalContext> blocks(static_cast<size_t>(P) * s.block_num);
    std::vector<std::vector<int64_t>> args(blocks.size(), std::vector<int64_t>(KERNEL_MAX_ARGS));
    std::vector<std::thread> threads;
    for (int r = 0; r < P; ++r) {
      for (int b = 0; b < s.block_num; ++b) {
        const size_t id = static_cast<size_t>(r) * s.block_num + b;
        blocks[id] = LocalContext{b, s.block_num};
        for (int t = 0; t < kTensorCount; ++t) {
          args[id][t] = reinterpret_cast<int64_t>(&tensors[r][t]);
        }
        args[id][kTensorCount] = reinterpret_cast<int64_t>(&contexts[r]);
        args[id][SPMD_LOCAL_CONTEXT_INDEX] = reinterpret_cast<int64_t>(&blocks[id]);
        if (r != s.skip_rank) {
          threads.emplace_back([r, &args, id] {
            current_rank = r;
            kernel_entry(args[id].data());
          });
        }
      }
    }
    for (std::thread& thread : threads) {
      thread.join();
    }
    for (int r = 0; r < P; ++r) {
      std::printf("error %d\n", errors[r].load());
      print_values("recv", recv_counts[r].data(), P);
      print_values("target", target_of(r), target_elems);
      print_values("signal", signal_of(r), static_cast<size_t>(P) * S);
    }
  }
  for (unsigned char* window : windows) {
    std::free(window);
  }
  return 0;
}
