#include "fasa/kernels/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <vector>

#include <unistd.h>

#include "fasa/core/error.h"
#include "fasa/core/isa_intrin.h"
#include "fasa/core/parallel.h"
#include "fasa/kernels/isa_api.h"

#include "fasa/core/isa_begin.h"

namespace fasa::FASA_ISA_NS {

namespace {

constexpr uint64_t kPage = 4096;
constexpr int64_t kBlock = 256;  // bytes summed per inner-loop step: four 64-byte vectors

// Every repetition's sum lands here, so the compiler has to keep the loads that produce it.
volatile uint64_t g_sink = 0;

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

#if FASA_AVX512
// GCC 12 warns falsely inside its own _mm512_reduce_add_epi64 (the _mm256_undefined_si256 of
// _mm512_extracti64x4_epi64; GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// Sum of the 64-bit words in blocks [begin, end) of `base` (64-byte aligned).
uint64_t sum_blocks(const uint8_t* base, int64_t begin, int64_t end) {
#if FASA_AVX512
  // Four independent accumulators keep four loads in flight per step.
  __m512i a0 = _mm512_setzero_si512();
  __m512i a1 = _mm512_setzero_si512();
  __m512i a2 = _mm512_setzero_si512();
  __m512i a3 = _mm512_setzero_si512();
  for (int64_t b = begin; b < end; ++b) {
    const uint8_t* p = base + b * kBlock;
    a0 = _mm512_add_epi64(a0, _mm512_load_si512(p));
    a1 = _mm512_add_epi64(a1, _mm512_load_si512(p + 64));
    a2 = _mm512_add_epi64(a2, _mm512_load_si512(p + 128));
    a3 = _mm512_add_epi64(a3, _mm512_load_si512(p + 192));
  }
  const __m512i s = _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3));
  return static_cast<uint64_t>(_mm512_reduce_add_epi64(s));
#else
  constexpr int64_t kWords = kBlock / 8;
  const uint64_t* w = reinterpret_cast<const uint64_t*>(base);
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (int64_t i = begin * kWords; i < end * kWords; i += 4) {
    s0 += w[i];
    s1 += w[i + 1];
    s2 += w[i + 2];
    s3 += w[i + 3];
  }
  return s0 + s1 + s2 + s3;
#endif
}

#if FASA_AVX512
#pragma GCC diagnostic pop
#endif

}  // namespace

BandwidthResult measure_read_bandwidth(uint64_t bytes, int reps) {
  if (bytes < kMinBandwidthBytes) {
    fail(
        "bandwidth probe buffer of {} bytes is too small: it must be at least {} bytes (64 MiB) "
        "to measure memory rather than cache",
        bytes, kMinBandwidthBytes);
  }
  if (reps < 1) fail("bandwidth probe needs at least one repetition (got {})", reps);
  const uint64_t phys = physical_memory_bytes();
  // malloc succeeds on overcommit and touching the pages would then bring in the OOM killer;
  // refuse sizes that cannot sensibly fit instead.
  if (phys > 0 && bytes > phys / 2) {
    fail("bandwidth probe buffer of {} bytes is more than half the physical memory ({} bytes)",
         bytes, phys);
  }
  const uint64_t size = bytes / kPage * kPage;
  std::unique_ptr<uint8_t, decltype(&std::free)> buf(static_cast<uint8_t*>(
                                                         std::aligned_alloc(kPage, size)),
                                                     &std::free);
  if (!buf) fail("cannot allocate {} bytes for the bandwidth probe", size);
  uint8_t* base = buf.get();

  // Touch every page once, from the workers that will read it (first-touch placement). Without
  // a write, untouched anonymous pages all map the kernel's shared zero page and the "DRAM" reads
  // would come from cache.
  const int64_t n_pages = static_cast<int64_t>(size / kPage);
  parallel_ranges(n_pages, [&](int64_t begin, int64_t end, int) {
    for (int64_t p = begin; p < end; ++p) {
      *reinterpret_cast<uint64_t*>(base + p * kPage) = static_cast<uint64_t>(p);
    }
  });

  const int64_t n_blocks = static_cast<int64_t>(size / kBlock);
  const int nt = static_cast<int>(std::min<int64_t>(num_threads(), n_blocks));
  std::vector<uint64_t> partial(static_cast<size_t>(nt) * 8);  // one cache line per worker
  BandwidthResult r;
  r.bytes = size;
  r.threads = nt;
  r.seconds = 0.0;
  for (int rep = 0; rep < reps; ++rep) {
    std::fill(partial.begin(), partial.end(), 0);
    const auto t0 = std::chrono::steady_clock::now();
    parallel_ranges(n_blocks, [&](int64_t begin, int64_t end, int w) {
      partial[static_cast<size_t>(w) * 8] = sum_blocks(base, begin, end);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    uint64_t total = 0;
    for (int w = 0; w < nt; ++w) total += partial[static_cast<size_t>(w) * 8];
    g_sink = total;
    if (rep == 0 || s < r.seconds) r.seconds = s;
  }
  r.read_gb_s = static_cast<double>(size) / std::max(r.seconds, 1e-12) / 1e9;
  return r;
}

}  // namespace fasa::FASA_ISA_NS

#include "fasa/core/isa_end.h"
