// pypto_build/host_float.h -- the device's 16-bit floating-point types for kernels that run in
// the host simulation.
//
// The device compiler knows `half` (IEEE binary16) and `bfloat16_t` (the upper half of a
// binary32) as arithmetic types; a host compiler knows neither. So that one rendered kernel
// source serves both targets, a kernel spells its element types with the device's names and, on
// the SIM side, takes these storage types into its namespace (`using pypto_build::half;`). It
// computes in float and converts at the boundaries where the device converts:
//
//   to_float(v)                  exact widening: every half and bfloat16 value is a float
//   from_float<T>(f)             narrowing, round to nearest, ties to even: the device's default
//                                conversion (AscendC RoundMode::CAST_RINT, and CAST_NONE where it
//                                narrows) and the cube unit's output conversion
//   from_float_half_away<T>(f)   narrowing, round to nearest, ties away from zero:
//                                RoundMode::CAST_ROUND
//   to_float_n, from_float_n     to_float and from_float over arrays, for the simulation's hot
//                                loops (a matmul tile's operands and products, a reduction):
//                                the same values bit for bit; on x86-64 CPUs with F16C, eight
//                                halves a time with its conversion instructions
//
// Both narrowings keep the sign of zero, produce subnormals below the smallest normal, overflow
// to infinity and turn a NaN into a quiet NaN. Host-only: the device never includes this header.

#ifndef PYPTO_BUILD_HOST_FLOAT_H_
#define PYPTO_BUILD_HOST_FLOAT_H_

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace pypto_build {

// IEEE binary16, stored as its bit pattern.
struct half {
  uint16_t bits;
};

// bfloat16 (sign, 8 exponent bits, 7 mantissa bits), stored as its bit pattern.
struct bfloat16_t {
  uint16_t bits;
};

static_assert(sizeof(half) == 2 && sizeof(bfloat16_t) == 2, "16-bit storage types");

namespace host_float_detail {

enum class Rounding { kNearestEven, kHalfAway };

inline uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

inline float bits_float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// Whether dropping `dropped` of the `width` low bits of a magnitude whose kept part is `kept`
// rounds the magnitude up.
inline bool rounds_up(uint32_t kept, uint32_t dropped, uint32_t width, Rounding rounding) {
  const uint32_t halfway = uint32_t{1} << (width - 1);
  if (rounding == Rounding::kHalfAway) {
    return dropped >= halfway;
  }
  return dropped > halfway || (dropped == halfway && (kept & 1u) != 0);
}

inline uint16_t narrow_half(float value, Rounding rounding) {
  const uint32_t bits = float_bits(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) {  // infinity or NaN
    return static_cast<uint16_t>(sign | (magnitude > 0x7f800000u ? 0x7e00u : 0x7c00u));
  }
  const int32_t exponent = static_cast<int32_t>(magnitude >> 23) - 127;
  if (exponent < -25) {  // below half the smallest subnormal (2^-25): zero in either rounding
    return sign;
  }
  // The significand with its implicit bit; a float subnormal is far below any half and was
  // returned as zero above.
  const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  // Bits to drop: 13 for a half normal (10 of the float's 23 fraction bits stay), more below
  // the smallest normal exponent (-14), where the half's spacing stays 2^-24.
  const uint32_t shift = exponent >= -14 ? 13u : static_cast<uint32_t>(13 + (-14 - exponent));
  uint32_t kept = significand >> shift;
  const uint32_t dropped = significand & ((uint32_t{1} << shift) - 1u);
  if (rounds_up(kept, dropped, shift, rounding)) {
    ++kept;  // a carry out of the fraction moves into the exponent field below
  }
  // A normal's kept part carries the implicit bit (0x400), which the biased exponent absorbs;
  // a subnormal's kept part is the whole encoding (0x400 there is the smallest normal).
  const uint32_t encoded =
      exponent >= -14 ? (static_cast<uint32_t>(exponent + 14) << 10) + kept : kept;
  return static_cast<uint16_t>(sign | (encoded >= 0x7c00u ? 0x7c00u : encoded));
}

inline uint16_t narrow_bfloat16(float value, Rounding rounding) {
  const uint32_t bits = float_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep it a (quiet) NaN
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  }
  // bfloat16 shares binary32's exponent range, so rounding the low 16 bits of the pattern is
  // the whole conversion: a carry moves into the exponent, the largest finite values round to
  // infinity, subnormals stay subnormal.
  const uint32_t kept = bits >> 16;
  return static_cast<uint16_t>(kept + (rounds_up(kept, bits & 0xffffu, 16, rounding) ? 1u : 0u));
}

template <typename T>
struct Narrow;

template <>
struct Narrow<half> {
  static half apply(float value, Rounding rounding) { return half{narrow_half(value, rounding)}; }
};

template <>
struct Narrow<bfloat16_t> {
  static bfloat16_t apply(float value, Rounding rounding) {
    return bfloat16_t{narrow_bfloat16(value, rounding)};
  }
};

template <>
struct Narrow<float> {
  static float apply(float value, Rounding) { return value; }
};

}  // namespace host_float_detail

inline float to_float(half value) {
  const uint32_t sign = static_cast<uint32_t>(value.bits & 0x8000u) << 16;
  const uint32_t exponent = (value.bits >> 10) & 0x1fu;
  const uint32_t fraction = value.bits & 0x3ffu;
  if (exponent == 0x1fu) {  // infinity or NaN
    return host_float_detail::bits_float(sign | 0x7f800000u | (fraction << 13));
  }
  if (exponent == 0) {  // zero or subnormal: fraction * 2^-24, exact in float
    const float magnitude = static_cast<float>(fraction) * (1.0f / 16777216.0f);
    return sign != 0 ? -magnitude : magnitude;
  }
  return host_float_detail::bits_float(sign | ((exponent + 112u) << 23) | (fraction << 13));
}

inline float to_float(bfloat16_t value) {
  return host_float_detail::bits_float(static_cast<uint32_t>(value.bits) << 16);
}

inline float to_float(float value) { return value; }

template <typename T>
inline T from_float(float value) {
  return host_float_detail::Narrow<T>::apply(value, host_float_detail::Rounding::kNearestEven);
}

template <typename T>
inline T from_float_half_away(float value) {
  return host_float_detail::Narrow<T>::apply(value, host_float_detail::Rounding::kHalfAway);
}

namespace host_float_detail {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(PYPTO_BUILD_HOST_FLOAT_SCALAR)
#define PYPTO_BUILD_HOST_FLOAT_F16C 1
}  // namespace host_float_detail
}  // namespace pypto_build
#include <immintrin.h>
namespace pypto_build {
namespace host_float_detail {
#pragma GCC push_options
#pragma GCC target("avx,f16c")

// VCVTPH2PS is exact, as to_float is; a signaling NaN comes out quiet, which no arithmetic on
// it tells apart.
inline void widen_f16c(const half* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(bits));
  }
  for (; i < n; ++i) {
    dst[i] = _cvtsh_ss(src[i].bits);
  }
}

// VCVTPS2PH rounds to nearest even, keeps the sign of zero, produces subnormals and overflows
// to infinity, as narrow_half does; a NaN keeps its payload's top bits there, where from_float
// gives the canonical quiet NaN with its sign, so NaN lanes are replaced by that.
inline void narrow_f16c(const float* src, half* dst, int64_t n) {
  const __m256 canonical_magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000));
  const __m256 sign_mask = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u)));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 value = _mm256_loadu_ps(src + i);
    const __m256 nan = _mm256_cmp_ps(value, value, _CMP_UNORD_Q);
    const __m256 canonical = _mm256_or_ps(_mm256_and_ps(value, sign_mask), canonical_magnitude);
    value = _mm256_blendv_ps(value, canonical, nan);
    const __m128i bits = _mm256_cvtps_ph(value, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), bits);
  }
  for (; i < n; ++i) {
    dst[i] = half{narrow_half(src[i], Rounding::kNearestEven)};
  }
}
#pragma GCC pop_options

// Whether this CPU has F16C (asked once per process).
inline bool has_f16c() {
  static const bool f16c = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("f16c") != 0 && __builtin_cpu_supports("avx") != 0;
  }();
  return f16c;
}
#endif

}  // namespace host_float_detail

// dst[i] = to_float(src[i]) for i < n.
template <typename T>
inline void to_float_n(const T* src, float* dst, int64_t n) {
#if defined(PYPTO_BUILD_HOST_FLOAT_F16C)
  if constexpr (std::is_same_v<T, half>) {
    if (host_float_detail::has_f16c()) {
      host_float_detail::widen_f16c(src, dst, n);
      return;
    }
  }
#endif
  for (int64_t i = 0; i < n; ++i) {
    dst[i] = to_float(src[i]);
  }
}

// dst[i] = from_float<T>(src[i]) for i < n.
template <typename T>
inline void from_float_n(const float* src, T* dst, int64_t n) {
#if defined(PYPTO_BUILD_HOST_FLOAT_F16C)
  if constexpr (std::is_same_v<T, half>) {
    if (host_float_detail::has_f16c()) {
      host_float_detail::narrow_f16c(src, dst, n);
      return;
    }
  }
#endif
  for (int64_t i = 0; i < n; ++i) {
    dst[i] = from_float<T>(src[i]);
  }
}

}  // namespace pypto_build

#endif  // PYPTO_BUILD_HOST_FLOAT_H_
