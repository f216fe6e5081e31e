// pypto_build/host_matmul.h -- the cube unit's matmul for kernels that run in the host
// simulation: c[i][j] = sum over k of a[i][k] * b[k][j] in FP32, fast, with the device's sums.
//
// The cube unit multiplies 16-bit operands and accumulates in FP32. A simulation that computes
// each sum as the scalar loop would (one FP32 product and one FP32 addition per k, k in order)
// gets the same bits whatever the blocking, as long as every sum keeps its k order: blocking the
// rows and columns, keeping sums in vector registers and streaming the operands from packed
// panels change where a sum lives, never which additions it makes or in what order. So this
// header packs the operands (PackedA, PackedB: the element callables convert from the kernel's
// storage; the caller keeps them for as many products as share them), runs a register-blocked
// kernel of kRowBlock x kPanel sums over the whole depth, and hands each finished sum to the
// caller's store, which rounds it as the device does.
//
// Why no compiler setting changes a result: each product of two widened 16-bit values (half or
// bfloat16 converted to float) is exact in FP32 (11 + 11 significand bits fit in 24), so a fused
// multiply-add rounds the same sum as a multiplication followed by an addition, and the
// vectorized lanes compute each sum exactly as the scalar loop. Operands that are not widened
// 16-bit values get the scalar loop's result only where the compiler does not contract (ISO C++
// modes, the sim toolchain's -std=c++17, do not).
//
// With GCC on x86-64 the block kernel is compiled twice, for the baseline and for AVX2, and the
// first call picks the one the CPU runs, so a binary built on one machine runs on any x86-64
// host, at AVX2 speed where the host has it (-DPYPTO_BUILD_HOST_MATMUL_BASELINE builds the
// baseline alone). Host-only: the device never includes this header.

#ifndef PYPTO_BUILD_HOST_MATMUL_H_
#define PYPTO_BUILD_HOST_MATMUL_H_

#include <cstdint>
#include <cstring>
#include <vector>

namespace pypto_build {
namespace host_matmul {

// Sums per block: kRowBlock rows of a, kPanel columns of b.
constexpr int64_t kRowBlock = 4;
constexpr int64_t kPanel = 16;

// Part of a block: sums[r][j] for kRows rows from a's row r0 and all kPanel columns, the sum
// over k < depth of a[k][r0 + r] * b[k][j], k in order, from the packed panels a (depth x
// kRowBlock) and b (depth x kPanel), with Vec a vector of floats. Every loop but k's is unrolled
// completely, so that the compiler keeps the kRows x kPanel sums in registers (at -O2 it would
// keep an array of them in memory and store and load every sum at every k).
template <typename Vec, int kRows>
__attribute__((always_inline)) inline void multiply_rows(const float* a, int64_t r0,
                                                         const float* b, int64_t depth,
                                                         float sums[kRowBlock][kPanel]) {
  constexpr int kLanes = static_cast<int>(sizeof(Vec) / sizeof(float));
  constexpr int kVectors = static_cast<int>(kPanel) / kLanes;
  static_assert(kVectors * kLanes == kPanel, "a panel is whole vectors");
  Vec c[kRows][kVectors] = {};
  for (int64_t k = 0; k < depth; ++k) {
    Vec column[kVectors];
#pragma GCC unroll 16
    for (int v = 0; v < kVectors; ++v) {
      std::memcpy(&column[v], b + k * kPanel + v * kLanes, sizeof(Vec));
    }
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const float x = a[k * kRowBlock + r0 + r];
#pragma GCC unroll 16
      for (int v = 0; v < kVectors; ++v) {
        c[r][v] += x * column[v];
      }
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 16
    for (int v = 0; v < kVectors; ++v) {
      std::memcpy(&sums[r0 + r][v * kLanes], &c[r][v], sizeof(Vec));
    }
  }
}

// The baseline kernel: vectors of four floats (SSE2, NEON), two rows at a time (8 sums of four
// and a panel row: 13 of SSE2's 16 registers).
typedef float Vec4 __attribute__((vector_size(16)));

inline void multiply_block_baseline(const float* a, const float* b, int64_t depth,
                                    float sums[kRowBlock][kPanel]) {
  multiply_rows<Vec4, 2>(a, 0, b, depth, sums);
  multiply_rows<Vec4, 2>(a, 2, b, depth, sums);
}

// The AVX2 kernel: vectors of eight floats, the whole block at once (8 sums of eight). GCC gives
// a vector type its machine mode where the type is declared, so the type is declared, like the
// function, where AVX2 is enabled: declared outside, it would stay a pair of SSE values kept in
// memory even inside an AVX2 function.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(PYPTO_BUILD_HOST_MATMUL_BASELINE)
#define PYPTO_BUILD_HOST_MATMUL_AVX2 1
#pragma GCC push_options
#pragma GCC target("avx2")
typedef float Avx2Vec8 __attribute__((vector_size(32)));

inline void multiply_block_avx2(const float* a, const float* b, int64_t depth,
                                float sums[kRowBlock][kPanel]) {
  multiply_rows<Avx2Vec8, kRowBlock>(a, 0, b, depth, sums);
}
#pragma GCC pop_options
#endif

// One block, sums[r][j] for every r < kRowBlock and j < kPanel, with the kernel for this host:
// AVX2 where the CPU has it (asked once per process).
inline void multiply_block(const float* a, const float* b, int64_t depth,
                           float sums[kRowBlock][kPanel]) {
#if defined(PYPTO_BUILD_HOST_MATMUL_AVX2)
  static const bool avx2 = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  if (avx2) {
    multiply_block_avx2(a, b, depth, sums);
    return;
  }
#endif
  multiply_block_baseline(a, b, depth, sums);
}

// b (depth x cols) packed into column panels of kPanel, the columns past cols zero, from a
// callable that returns an element as float: b(k, j). column_major says how b is stored (a
// column's elements adjacent: a transposed weight), so that b is read in the order of its
// storage either way: reading it across would touch a new cache line at every element.
class PackedB {
 public:
  template <class Element>
  void set(int64_t depth, int64_t cols, Element element, bool column_major = false) {
    depth_ = depth;
    cols_ = cols;
    const int64_t panels = (cols + kPanel - 1) / kPanel;
    data_.assign(static_cast<size_t>(panels * depth * kPanel), 0.0f);
    if (column_major) {
      for (int64_t j = 0; j < cols; ++j) {
        float* column = data_.data() + (j / kPanel) * depth * kPanel + j % kPanel;
        for (int64_t k = 0; k < depth; ++k) {
          column[k * kPanel] = element(k, j);
        }
      }
      return;
    }
    for (int64_t k = 0; k < depth; ++k) {  // each row of b fills one line of every panel
      for (int64_t j0 = 0; j0 < cols; j0 += kPanel) {
        float* line = data_.data() + ((j0 / kPanel) * depth + k) * kPanel;
        const int64_t width = cols - j0 < kPanel ? cols - j0 : kPanel;
        for (int64_t j = 0; j < width; ++j) {
          line[j] = element(k, j0 + j);
        }
      }
    }
  }

  int64_t depth() const { return depth_; }
  int64_t cols() const { return cols_; }
  const float* panel(int64_t j0) const { return data_.data() + (j0 / kPanel) * depth_ * kPanel; }

 private:
  int64_t depth_ = 0;
  int64_t cols_ = 0;
  std::vector<float> data_;  // [panel][k][kPanel]
};

// a (rows x depth) packed into row blocks of kRowBlock, the rows past rows zero, from a
// callable that returns an element as float: a(i, k).
class PackedA {
 public:
  template <class Element>
  void set(int64_t rows, int64_t depth, Element element) {
    rows_ = rows;
    depth_ = depth;
    const int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
    data_.assign(static_cast<size_t>(blocks * depth * kRowBlock), 0.0f);
    for (int64_t i = 0; i < rows; ++i) {
      float* block = data_.data() + (i / kRowBlock) * depth * kRowBlock + i % kRowBlock;
      for (int64_t k = 0; k < depth; ++k) {
        block[k * kRowBlock] = element(i, k);
      }
    }
  }

  int64_t rows() const { return rows_; }
  const float* block(int64_t i0) const {
    return data_.data() + (i0 / kRowBlock) * depth_ * kRowBlock;
  }

 private:
  int64_t rows_ = 0;
  int64_t depth_ = 0;
  std::vector<float> data_;  // [block][k][kRowBlock]
};

// c = a @ b for operands packed with the same depth: calls store(i, j, sum) once for every
// i < a.rows(), j < b.cols(). The packed operands are kept by the caller, so a kernel that
// multiplies the same rows by several column blocks, or several row blocks by the same columns,
// converts each operand once.
template <class Store>
void multiply(const PackedA& a, const PackedB& b, Store store) {
  float sums[kRowBlock][kPanel];
  for (int64_t j0 = 0; j0 < b.cols(); j0 += kPanel) {
    for (int64_t i0 = 0; i0 < a.rows(); i0 += kRowBlock) {
      multiply_block(a.block(i0), b.panel(j0), b.depth(), sums);
      for (int64_t r = 0; r < kRowBlock && i0 + r < a.rows(); ++r) {
        for (int64_t j = 0; j < kPanel && j0 + j < b.cols(); ++j) {
          store(i0 + r, j0 + j, sums[r][j]);
        }
      }
    }
  }
}

}  // namespace host_matmul
}  // namespace pypto_build

#endif  // PYPTO_BUILD_HOST_MATMUL_H_
