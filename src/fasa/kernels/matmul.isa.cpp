// y[t, o] = sum_i W[o, i] * x[t, i] for quantized or float weights (see matmul.h).
//
// Structure: worker w owns a contiguous range of output rows (parallel_ranges over groups of
// kRows rows). It dequantizes an L1-sized chunk of rows (kChunkBytes of f32) into its own scratch,
// prefetching the next chunk's raw bytes, then walks all tokens in tiles that stay in L2,
// computing kRows x kToks dot products at once with a register micro-kernel. Every dot product,
// whatever kernel shape computes it, is the same fixed sequence of fp32 operations (matmul.h),
// so the result never depends on tiling, threads or n_tok.
#include "fasa/kernels/matmul.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "fasa/core/amx.h"
#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/core/workspace.h"
#include "fasa/kernels/dequant.h"
#include "fasa/kernels/matmul_amx.h"
#include "fasa/kernels/matmul_q8.h"
#include "fasa/kernels/matmul_q8k.h"
#include "fasa/kernels/repack.h"

#include "fasa/core/isa_intrin.h"
#include "fasa/kernels/isa_api.h"

#include "fasa/core/isa_begin.h"

namespace fasa::FASA_ISA_NS {

namespace {

constexpr int kLanes = 16;                     // accumulator lanes per dot product (one zmm)
constexpr int kRows = 4;                       // weight rows per micro-kernel call
constexpr int kToks = 4;                       // tokens per micro-kernel call
constexpr int64_t kChunkBytes = 32 << 10;      // dequantized rows per worker step (~L1)
constexpr int64_t kTileBytes = 256 << 10;      // activation rows per token tile (~L2 share)
constexpr int64_t kMinParallelMacs = 1 << 16;  // below this many multiply-adds, one thread

// ---- portable kernel --------------------------------------------------------------------------

// The fixed horizontal sum of matmul.h: for s = 8, 4, 2, 1: acc[l] += acc[l + s].
inline float hsum_portable(float* acc) {  // acc: [kLanes], clobbered
  for (int s = kLanes / 2; s >= 1; s /= 2) {
    for (int l = 0; l < s; ++l) acc[l] = acc[l] + acc[l + s];
  }
  return acc[0];
}

// One dot product with the fixed lane scheme: lane l takes elements i = l mod 16 in order.
inline float dot_portable(const float* w, const float* x, int64_t n) {  // w, x: [n]
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] = std::fma(w[i + l], x[i + l], acc[l]);
  }
  for (int l = 0; i + l < n; ++l) acc[l] = std::fma(w[i + l], x[i + l], acc[l]);
  return hsum_portable(acc);
}

// Four dot products of one x row with four w rows at once (4 x 16 independent accumulators, so
// the FMA latency is hidden); each is exactly dot_portable's sequence of operations.
inline void dot4_portable(const float* w, int64_t ldw, const float* x, int64_t n, float* y) {
  float acc[4][kLanes] = {};  // [row, lane]
  const float* w0 = w;
  const float* w1 = w + ldw;
  const float* w2 = w + 2 * ldw;
  const float* w3 = w + 3 * ldw;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const float xv = x[i + l];
      acc[0][l] = std::fma(w0[i + l], xv, acc[0][l]);
      acc[1][l] = std::fma(w1[i + l], xv, acc[1][l]);
      acc[2][l] = std::fma(w2[i + l], xv, acc[2][l]);
      acc[3][l] = std::fma(w3[i + l], xv, acc[3][l]);
    }
  }
  for (int l = 0; i + l < n; ++l) {
    const float xv = x[i + l];
    acc[0][l] = std::fma(w0[i + l], xv, acc[0][l]);
    acc[1][l] = std::fma(w1[i + l], xv, acc[1][l]);
    acc[2][l] = std::fma(w2[i + l], xv, acc[2][l]);
    acc[3][l] = std::fma(w3[i + l], xv, acc[3][l]);
  }
  for (int r = 0; r < 4; ++r) y[r] = hsum_portable(acc[r]);
}

// y[t * ldy + r] = dot(w[r * ldw ..], x[t * ldx ..]) for r < n_rows, t < n_toks.
void kernel_portable(int n_rows, int n_toks, const float* w, int64_t ldw, const float* x,
                     int64_t ldx, int64_t n, float* y, int64_t ldy) {
  for (int t = 0; t < n_toks; ++t) {
    int r = 0;
    for (; r + 4 <= n_rows; r += 4) {
      dot4_portable(w + r * ldw, ldw, x + t * ldx, n, y + t * ldy + r);
    }
    for (; r < n_rows; ++r) y[t * ldy + r] = dot_portable(w + r * ldw, x + t * ldx, n);
  }
}

#if FASA_AVX512
// GCC 12.2's AVX-512 intrinsics build "undefined" vectors by self-initialization, which trips
// -W(maybe-)uninitialized at every inlined use (GCC bug 105593, fixed in 12.3): silence it here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// ---- AVX-512 kernel ---------------------------------------------------------------------------

// Same tree as hsum_portable: 16 -> 8 (l + 8), -> 4 (l + 4), -> 2 (l + 2), -> 1 (l + 1).
inline float hsum_avx512(__m512 v) {
  const __m256 lo8 = _mm512_castps512_ps256(v);
  const __m256 hi8 = _mm512_castps512_ps256(_mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(3, 2, 3, 2)));
  const __m256 s8 = _mm256_add_ps(lo8, hi8);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_movehdup_ps(s2));
  return _mm_cvtss_f32(s1);
}

// R x T dot products over n elements; lane l of acc[r][t] is lane l of the portable scheme.
template <int R, int T>
void kernel_avx512(const float* w, int64_t ldw, const float* x, int64_t ldx, int64_t n, float* y,
                   int64_t ldy) {
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    __m512 wv[R];
    for (int r = 0; r < R; ++r) wv[r] = _mm512_loadu_ps(w + r * ldw + i);
    for (int t = 0; t < T; ++t) {
      const __m512 xv = _mm512_loadu_ps(x + t * ldx + i);
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  }
  if (i < n) {
    // Tail (float weights only): masked lanes keep their accumulator untouched, exactly like
    // the portable loop that skips them.
    const __mmask16 k = static_cast<__mmask16>((1u << (n - i)) - 1u);
    __m512 wv[R];
    for (int r = 0; r < R; ++r) wv[r] = _mm512_maskz_loadu_ps(k, w + r * ldw + i);
    for (int t = 0; t < T; ++t) {
      const __m512 xv = _mm512_maskz_loadu_ps(k, x + t * ldx + i);
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_mask3_fmadd_ps(wv[r], xv, acc[r][t], k);
    }
  }
  for (int t = 0; t < T; ++t) {
    for (int r = 0; r < R; ++r) y[t * ldy + r] = hsum_avx512(acc[r][t]);
  }
}

template <int R>
void kernel_avx512_rows(int n_toks, const float* w, int64_t ldw, const float* x, int64_t ldx,
                        int64_t n, float* y, int64_t ldy) {
  switch (n_toks) {
    case 1: kernel_avx512<R, 1>(w, ldw, x, ldx, n, y, ldy); return;
    case 2: kernel_avx512<R, 2>(w, ldw, x, ldx, n, y, ldy); return;
    case 3: kernel_avx512<R, 3>(w, ldw, x, ldx, n, y, ldy); return;
    default: kernel_avx512<R, kToks>(w, ldw, x, ldx, n, y, ldy); return;
  }
}

void kernel_avx512_any(int n_rows, int n_toks, const float* w, int64_t ldw, const float* x,
                       int64_t ldx, int64_t n, float* y, int64_t ldy) {
  switch (n_rows) {
    case 1: kernel_avx512_rows<1>(n_toks, w, ldw, x, ldx, n, y, ldy); return;
    case 2: kernel_avx512_rows<2>(n_toks, w, ldw, x, ldx, n, y, ldy); return;
    case 3: kernel_avx512_rows<3>(n_toks, w, ldw, x, ldx, n, y, ldy); return;
    default: kernel_avx512_rows<kRows>(n_toks, w, ldw, x, ldx, n, y, ldy); return;
  }
}
#pragma GCC diagnostic pop
#endif  // FASA_AVX512

// ---- driver -----------------------------------------------------------------------------------

using DequantFn = void (*)(DType, const void*, float*, int64_t);
using KernelFn = void (*)(int n_rows, int n_toks, const float* w, int64_t ldw, const float* x,
                          int64_t ldx, int64_t n, float* y, int64_t ldy);

int64_t round_down_multiple(int64_t v, int64_t m) { return v / m * m; }

void matmul_impl(DequantFn dequant, KernelFn kernel, DType type, const void* w, int64_t n_out,
                 int64_t n_in, const float* x, int64_t n_tok, float* y) {
  if (n_out <= 0 || n_tok <= 0) return;
  const DTypeInfo& info = dtype_info(type);
  FASA_DCHECK(info.supported && n_in % info.block_elems == 0);
  const int64_t row_bytes = n_in / info.block_elems * info.block_bytes;
  const bool direct = type == DType::F32;  // f32 weights are read in place
  const int64_t row_f32_bytes = std::max<int64_t>(n_in, 1) * 4;
  const int64_t chunk_rows =
      std::clamp<int64_t>(round_down_multiple(kChunkBytes / row_f32_bytes, kRows), kRows, 64);
  const int64_t tile_toks =
      std::clamp<int64_t>(round_down_multiple(kTileBytes / row_f32_bytes, kToks), kToks, 256);
  const int64_t n_groups = (n_out + kRows - 1) / kRows;
  const auto* wb = static_cast<const uint8_t*>(w);

  auto run_groups = [&](int64_t g_begin, int64_t g_end, int /*worker*/) {
    ScratchFrame f;
    // [chunk_rows, n_in] dequantized weight rows
    float* scratch = direct ? nullptr : f.take<float>(static_cast<size_t>(chunk_rows * n_in));
    const int64_t o_end = std::min(g_end * kRows, n_out);
    for (int64_t o0 = g_begin * kRows; o0 < o_end; o0 += chunk_rows) {
      const int64_t nr = std::min(chunk_rows, o_end - o0);
      const float* wf;  // [nr, n_in]
      if (direct) {
        wf = reinterpret_cast<const float*>(wb + o0 * row_bytes);
      } else {
        // Prefetch the next chunk's raw rows (into L2) while this one is dequantized and used:
        // at n_tok = 1 the hardware prefetcher alone lets the loads stall between the
        // dequantize and compute phases (measured ~20% faster on Q8_0 49152 x 576).
        const int64_t next_end = std::min(o0 + nr + chunk_rows, o_end);
        const uint8_t* next = wb + (o0 + nr) * row_bytes;
        const int64_t next_bytes = std::max<int64_t>(next_end - (o0 + nr), 0) * row_bytes;
        for (int64_t b = 0; b < next_bytes; b += 64) __builtin_prefetch(next + b, 0, 2);
        for (int64_t r = 0; r < nr; ++r) {
          dequant(type, wb + (o0 + r) * row_bytes, scratch + r * n_in, n_in);
        }
        wf = scratch;
      }
      for (int64_t t0 = 0; t0 < n_tok; t0 += tile_toks) {
        const int64_t nt = std::min(tile_toks, n_tok - t0);
        for (int64_t r = 0; r < nr; r += kRows) {
          const int rr = static_cast<int>(std::min<int64_t>(kRows, nr - r));
          for (int64_t t = 0; t < nt; t += kToks) {
            const int tt = static_cast<int>(std::min<int64_t>(kToks, nt - t));
            kernel(rr, tt, wf + r * n_in, n_in, x + (t0 + t) * n_in, n_in, n_in,
                   y + (t0 + t) * n_out + o0 + r, n_out);
          }
        }
      }
    }
  };
  // Tiny products run on the calling thread: a fork/join would cost more than it saves. The
  // result is the same either way.
  if (n_out * n_in * n_tok < kMinParallelMacs) {
    team_single([&] { run_groups(0, n_groups, 0); });  // one worker, also in a team
  } else {
    parallel_ranges(n_groups, run_groups);
  }
}

}  // namespace

namespace detail {

void matmul_portable(DType type, const void* w, int64_t n_out, int64_t n_in, const float* x,
                     int64_t n_tok, float* y) {
  if (FASA_ISA_NS::has_q8_path(type)) {
    struct PortableQ8Acts {
      Q8Acts acts;
    };
    auto& acts = workspace_object<PortableQ8Acts>().acts;
    FASA_ISA_NS::quantize_acts_q8(x, n_tok, n_in, acts);
    detail::matmul_q8_portable(type, w, n_out, n_in, acts, y);
    return;
  }
  if (FASA_ISA_NS::has_q8k_path(type)) {
    struct PortableQ8KActs {
      Q8KActs acts;
    };
    auto& acts = workspace_object<PortableQ8KActs>().acts;
    FASA_ISA_NS::quantize_acts_q8k(x, n_tok, n_in, acts);
    detail::matmul_q8k_portable(type, w, n_out, n_in, acts, y);
    return;
  }
  matmul_impl(&dequantize_row_portable, &kernel_portable, type, w, n_out, n_in, x, n_tok, y);
}

}  // namespace detail

void matmul(DType type, const void* w, int64_t n_out, int64_t n_in, const float* x, int64_t n_tok,
            float* y, MatmulTiles tiles) {
  const bool batched_tiles = tiles == MatmulTiles::kAny && n_tok >= kAmxMinTokens && amx_active();
  if (FASA_ISA_NS::has_q8_path(
          type)) {  // 32-element block quants: integer dot products (matmul_q8.h)
    struct Q8ActsOfCall {
      Q8Acts acts;
    };
    auto& acts = workspace_object<Q8ActsOfCall>().acts;
    FASA_ISA_NS::quantize_acts_q8(x, n_tok, n_in, acts);
    if (batched_tiles && FASA_ISA_NS::matmul_q8_amx(type, w, n_out, n_in, acts, y)) {
      return;  // AMX tiles for batches (matmul_amx.h)
    }
    FASA_ISA_NS::matmul_q8(type, w, n_out, n_in, acts, y);
    return;
  }
  if (FASA_ISA_NS::has_q8k_path(type)) {  // K-quants: integer dot products (matmul_q8k.h)
    struct Q8KActsOfCall {
      Q8KActs acts;
    };
    auto& acts = workspace_object<Q8KActsOfCall>().acts;
    FASA_ISA_NS::quantize_acts_q8k(x, n_tok, n_in, acts);
    if (batched_tiles && FASA_ISA_NS::matmul_q8k_amx(type, w, n_out, n_in, acts, y)) {
      return;
    }
    FASA_ISA_NS::matmul_q8k(type, w, n_out, n_in, acts, y);
    return;
  }
#if FASA_AVX512
  matmul_impl(&FASA_ISA_NS::dequantize_row, &kernel_avx512_any, type, w, n_out, n_in, x, n_tok, y);
#else
  matmul_impl(&detail::dequantize_row_portable, &kernel_portable, type, w, n_out, n_in, x, n_tok,
              y);
#endif
}

// Fused calls (matmul.h): the quantized jobs' row groups (kRows, or 16 when repacked), concatenated in job order, are
// split statically over the workers of one region. A worker's piece of a job is rows [o0, o1):
// q8 types compute them in place (matmul_q8_rows); the K-quants call matmul_q8k on the row slice
// (inside a region it runs on the caller) and, for several tokens, scatter its [n_tok, o1 - o0]
// result into y's rows.
// Rows per group of a fused job: a repacked layout's slices must start at a 16-row group.
int64_t group_rows(DType t) { return is_repacked(t) ? kRepackRows : kRows; }

namespace {

// The jobs fused into one region (matmul_multi): which activations they need, their work.
struct FusedPlan {
  bool any_q8 = false, any_q8k = false;
  int64_t macs = 0;
};

// Picks the fused jobs (the quantized ones, unless the batch may take the AMX tiles) in job
// order into fused, their first concatenated groups into group0: [n_fused + 1].
[[gnu::always_inline]] inline FusedPlan plan_fused(const MatmulJob* jobs, int n_jobs, int64_t n_in,
                                                   int64_t n_tok, bool batched_tiles,
                                                   std::vector<int64_t>& group0,
                                                   std::vector<const MatmulJob*>& fused) {
  FusedPlan p;
  group0.assign(1, 0);
  fused.clear();
  for (int j = 0; j < n_jobs; ++j) {
    const MatmulJob& job = jobs[j];
    const bool q8 = FASA_ISA_NS::has_q8_path(job.type);
    const bool q8k = FASA_ISA_NS::has_q8k_path(job.type);
    if (job.n_out <= 0 || batched_tiles || !(q8 || q8k)) continue;  // separate calls below
    p.any_q8 |= q8;
    p.any_q8k |= q8k;
    fused.push_back(&job);
    group0.push_back(group0.back() + (job.n_out + group_rows(job.type) - 1) / group_rows(job.type));
    p.macs += job.n_out * n_in * n_tok;
  }
  return p;
}

// A worker's piece of a fused job: rows [o0, o1) of job.y [n_tok, job.n_out].
[[gnu::always_inline]] inline void fused_rows(const MatmulJob& job, int64_t n_in, int64_t n_tok,
                                              const Q8Acts& a8, const Q8KActs& a8k, int64_t o0,
                                              int64_t o1) {
  if (FASA_ISA_NS::has_q8_path(job.type)) {
    FASA_ISA_NS::matmul_q8_rows(job.type, job.w, job.n_out, n_in, a8, o0, o1, job.y);
    return;
  }
  const DTypeInfo& info = dtype_info(job.type);
  const auto* rows =
      static_cast<const uint8_t*>(job.w) + o0 * (n_in / info.block_elems * info.block_bytes);
  const int64_t n = o1 - o0;
  if (n_tok == 1) {
    FASA_ISA_NS::matmul_q8k(job.type, rows, n, n_in, a8k, job.y + o0);
    return;
  }
  ScratchFrame f;
  float* part = f.take<float>(static_cast<size_t>(n_tok * n));  // [n_tok, n]
  FASA_ISA_NS::matmul_q8k(job.type, rows, n, n_in, a8k, part);
  for (int64_t t = 0; t < n_tok; ++t) {
    std::copy(part + t * n, part + (t + 1) * n, job.y + t * job.n_out + o0);
  }
}

// The jobs not fused, one matmul call each: float types, or every job of a batch that may take
// the AMX tiles.
[[gnu::always_inline]] inline void separate_calls(const MatmulJob* jobs, int n_jobs, int64_t n_in,
                                                  const float* x, int64_t n_tok, MatmulTiles tiles,
                                                  bool batched_tiles) {
  for (int j = 0; j < n_jobs; ++j) {
    const MatmulJob& job = jobs[j];
    const bool quant = FASA_ISA_NS::has_q8_path(job.type) || FASA_ISA_NS::has_q8k_path(job.type);
    if (job.n_out > 0 && (batched_tiles || !quant)) {
      FASA_ISA_NS::matmul(job.type, job.w, job.n_out, n_in, x, n_tok, job.y, tiles);
    }
  }
}

}  // namespace

void matmul_multi(const MatmulJob* jobs, int n_jobs, int64_t n_in, const float* x, int64_t n_tok,
                  MatmulTiles tiles) {
  if (n_tok <= 0 || n_jobs <= 0) return;
  const bool batched_tiles = tiles == MatmulTiles::kAny && n_tok >= kAmxMinTokens && amx_active();
  struct FusedPlanScratch {
    std::vector<int64_t> group0;  // [n_fused + 1] first concatenated group per job
    std::vector<const MatmulJob*> fused;
  };
  FusedPlanScratch& sc = workspace_object<FusedPlanScratch>();
  auto& group0 = sc.group0;
  auto& fused = sc.fused;
  const FusedPlan plan = plan_fused(jobs, n_jobs, n_in, n_tok, batched_tiles, group0, fused);
  if (!fused.empty()) {
    struct FusedActs {
      Q8Acts acts8;
      Q8KActs acts8k;
    };
    FusedActs& sc = workspace_object<FusedActs>();
    auto& acts8 = sc.acts8;
    auto& acts8k = sc.acts8k;
    if (plan.any_q8) FASA_ISA_NS::quantize_acts_q8(x, n_tok, n_in, acts8);
    if (plan.any_q8k) FASA_ISA_NS::quantize_acts_q8k(x, n_tok, n_in, acts8k);
    const Q8Acts& a8 = acts8;  // the caller's: workers reach them through these references
    const Q8KActs& a8k = acts8k;
    const std::vector<int64_t>& g0 = group0;
    const std::vector<const MatmulJob*>& fj = fused;
    auto work = [&](int64_t g_begin, int64_t g_end, int /*worker*/) {
      for (size_t j = 0; j < fj.size(); ++j) {
        const int64_t lo = std::max(g_begin, g0[j]), hi = std::min(g_end, g0[j + 1]);
        if (lo >= hi) continue;
        const MatmulJob& job = *fj[j];
        const int64_t gr = group_rows(job.type);
        fused_rows(job, n_in, n_tok, a8, a8k, (lo - g0[j]) * gr,
                   std::min((hi - g0[j]) * gr, job.n_out));
      }
    };
    if (plan.macs < kMinParallelMacs) {
      team_single([&] { work(0, g0.back(), 0); });  // one worker, also in a team
    } else {
      parallel_ranges(g0.back(), work);
    }
  }
  separate_calls(jobs, n_jobs, n_in, x, n_tok, tiles, batched_tiles);
}

}  // namespace fasa::FASA_ISA_NS

#include "fasa/core/isa_end.h"
