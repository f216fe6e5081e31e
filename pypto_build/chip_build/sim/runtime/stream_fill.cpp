// stream_fill.cpp -- writing a run's windows before it starts (pypto_sim_stream_fill).
//
// A run's windows are filled once, with their given contents or zeros, and tens of megabytes of
// them are no longer in any cache when the run reads them. An ordinary store to a line that is
// not cached first reads the line (the core must own it before it writes part of it), so memset
// and small memcpys move every byte twice; glibc 2.36's memset always does, its memcpy only
// below a threshold of a few MiB. Non-temporal stores write whole lines without reading them:
// half the traffic, the same bytes. On x86-64 (SSE2, part of the baseline) the aligned middle of
// the range is written with them and the unaligned ends with memcpy/memset; elsewhere the whole
// range goes to memcpy/memset.

#include <cstring>

#include "sim_runtime.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace {

constexpr uint64_t kLine = 64;

void plain(uint8_t* dst, const uint8_t* src, uint64_t n) {
  if (src == nullptr) {
    std::memset(dst, 0, n);
  } else {
    std::memcpy(dst, src, n);
  }
}

}  // namespace

void pypto_sim_stream_fill(void* destination, const void* source, uint64_t nbytes) {
  auto* dst = static_cast<uint8_t*>(destination);
  const auto* src = static_cast<const uint8_t*>(source);
#if defined(__SSE2__)
  const uint64_t head = (kLine - reinterpret_cast<uintptr_t>(dst) % kLine) % kLine;
  if (nbytes < head + kLine) {
    plain(dst, src, nbytes);
    return;
  }
  plain(dst, src, head);
  const uint64_t lines = (nbytes - head) / kLine;
  uint8_t* line = dst + head;
  const uint8_t* from = src == nullptr ? nullptr : src + head;
  const __m128i zero = _mm_setzero_si128();
  for (uint64_t i = 0; i < lines; ++i, line += kLine) {
    for (uint64_t part = 0; part < kLine; part += 16) {
      const __m128i value =
          from == nullptr
              ? zero
              : _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i * kLine + part));
      _mm_stream_si128(reinterpret_cast<__m128i*>(line + part), value);
    }
  }
  _mm_sfence();  // the streamed lines are visible before any thread the caller starts reads them
  const uint64_t done = head + lines * kLine;
  plain(dst + done, src == nullptr ? nullptr : src + done, nbytes - done);
#else
  plain(dst, src, nbytes);
#endif
}
