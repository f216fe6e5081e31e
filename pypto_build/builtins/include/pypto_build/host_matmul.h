// pypto_build/host_matmul.h -- the cube unit's matmul for kernels that run in the host
// simulation: c[i][j] = sum over k of a[i][k] * b[k][j] in FP32, fast, with the device's sums.
//
// The cube unit multiplies 16-bit operands and accumulates in FP32. A simulation that computes
// each sum as the scalar loop would (one FP32 product and one FP32 addition per k, k in order)
// gets the same bits whatever the blocking, as long as every sum keeps its k order: blocking the
// rows and columns, keeping sums in vector registers and streaming the operands from packed
// panels change where a sum lives, never which additions it makes or in what order. So this
// header packs the operands once per matmul (the element callables convert from the kernel's
// storage), runs a register-blocked kernel of kRowBlock x kPanel sums over the whole depth, and
// hands each finished sum to the caller's store, which rounds it as the device does.
//
// Why no compiler setting changes a result: each product of two widened 16-bit values (half or
// bfloat16 converted to float) is exact in FP32 (11 + 11 significand bits fit in 24), so a fused
// multiply-add rounds the same sum as a multiplication followed by an addition, and the
// vectorized lanes compute each sum exactly as the scalar loop. Operands that are not widened
// 16-bit values get the scalar loop's result only where the compiler does not contract (ISO C++
// modes, the sim toolchain's -std=c++17, do not).
//
// The kernel is one function compiled twice on x86-64 (baseline and AVX2, chosen at load time
// by the dynamic loader), so a binary built on one machine runs on any x86-64 host, at AVX2
// speed where the host has it. Host-only: the device never includes this header.

#ifndef PYPTO_BUILD_HOST_MATMUL_H_
#define PYPTO_BUILD_HOST_MATMUL_H_

#include <cstdint>
#include <cstring>
#include <vector>

namespace pypto_build {
namespace host_matmul {

// Sums per block: kRowBlock rows of a, kPanel columns of b (two vectors of eight floats).
constexpr int64_t kRowBlock = 4;
constexpr int64_t kPanel = 16;

typedef float Vec8 __attribute__((vector_size(32)));

// The versions of the block kernel: on x86-64 a baseline and an AVX2 one, unless the build
// names its own (an empty definition builds the one its flags give).
#ifndef PYPTO_BUILD_HOST_MATMUL_CLONES
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define PYPTO_BUILD_HOST_MATMUL_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#endif
#ifndef PYPTO_BUILD_HOST_MATMUL_CLONES
#define PYPTO_BUILD_HOST_MATMUL_CLONES
#endif

// One block: sums[r][j] = sum over k < depth of a[k][r] * b[k][j], k in order, for the packed
// panels a (depth x kRowBlock) and b (depth x kPanel).
PYPTO_BUILD_HOST_MATMUL_CLONES
static void multiply_block(const float* a, const float* b, int64_t depth,
                           float sums[kRowBlock][kPanel]) {
  Vec8 c[kRowBlock][2] = {};
  for (int64_t k = 0; k < depth; ++k) {
    Vec8 b0;
    Vec8 b1;
    std::memcpy(&b0, b + k * kPanel, sizeof(b0));
    std::memcpy(&b1, b + k * kPanel + 8, sizeof(b1));
    for (int64_t r = 0; r < kRowBlock; ++r) {
      const float x = a[k * kRowBlock + r];
      c[r][0] += x * b0;
      c[r][1] += x * b1;
    }
  }
  std::memcpy(sums, c, sizeof(c));
}

// c = a @ b for a (rows x depth) and b (depth x cols), the operands given by callables that
// return an element as float: a(i, k), b(k, j). Keeps its packed panels between calls, so a
// kernel that multiplies tile after tile allocates once.
class Fp32Matmul {
 public:
  // Packs b (depth x cols) into column panels of kPanel; the columns past cols are zero.
  template <class Element>
  void set_b(int64_t depth, int64_t cols, Element element) {
    depth_ = depth;
    cols_ = cols;
    const int64_t panels = (cols + kPanel - 1) / kPanel;
    b_.assign(static_cast<size_t>(panels * depth * kPanel), 0.0f);
    for (int64_t k = 0; k < depth; ++k) {
      for (int64_t j = 0; j < cols; ++j) {
        b_[static_cast<size_t>(((j / kPanel) * depth + k) * kPanel + j % kPanel)] = element(k, j);
      }
    }
  }

  // Computes a (rows x depth) @ b and calls store(i, j, sum) once for every i < rows, j < cols.
  template <class Element, class Store>
  void multiply(int64_t rows, Element element, Store store) {
    const int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
    a_.assign(static_cast<size_t>(blocks * depth_ * kRowBlock), 0.0f);
    for (int64_t i = 0; i < rows; ++i) {
      float* block = a_.data() + (i / kRowBlock) * depth_ * kRowBlock + i % kRowBlock;
      for (int64_t k = 0; k < depth_; ++k) {
        block[k * kRowBlock] = element(i, k);
      }
    }
    float sums[kRowBlock][kPanel];
    for (int64_t j0 = 0; j0 < cols_; j0 += kPanel) {
      const float* panel = b_.data() + (j0 / kPanel) * depth_ * kPanel;
      for (int64_t i0 = 0; i0 < rows; i0 += kRowBlock) {
        multiply_block(a_.data() + (i0 / kRowBlock) * depth_ * kRowBlock, panel, depth_, sums);
        for (int64_t r = 0; r < kRowBlock && i0 + r < rows; ++r) {
          for (int64_t j = 0; j < kPanel && j0 + j < cols_; ++j) {
            store(i0 + r, j0 + j, sums[r][j]);
          }
        }
      }
    }
  }

 private:
  int64_t depth_ = 0;
  int64_t cols_ = 0;
  std::vector<float> a_;  // row blocks: [block][k][kRowBlock]
  std::vector<float> b_;  // column panels: [panel][k][kPanel]
};

}  // namespace host_matmul
}  // namespace pypto_build

#endif  // PYPTO_BUILD_HOST_MATMUL_H_
