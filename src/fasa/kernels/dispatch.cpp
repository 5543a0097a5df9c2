// The public kernel functions: each forwards to the active instruction set's (core/isa.h), one
// forwarder per isa_api.inc entry (keep the two lists in step). The cost is one switch on a
// relaxed atomic load per call, negligible next to the row-sized work of every kernel.
#include "fasa/core/isa.h"
#include "fasa/kernels/isa_api.h"

#if FASA_X86
#define FASA_DISPATCH(call)                 \
  switch (active_isa()) {                   \
    case Isa::Avx512:                       \
      return isa_avx512::call;              \
    case Isa::Avx2:                         \
      return isa_avx2::call;                \
    default:                                \
      return isa_scalar::call;              \
  }
#else
#define FASA_DISPATCH(call) return isa_scalar::call;
#endif

namespace fasa {

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
  FASA_DISPATCH(dequantize_row(type, src, dst, n))
}

void matmul(DType type, const void* w, int64_t n_out, int64_t n_in, const float* x, int64_t n_tok, float* y,
            MatmulTiles tiles) {
  FASA_DISPATCH(matmul(type, w, n_out, n_in, x, n_tok, y, tiles))
}

void matmul_multi(const MatmulJob* jobs, int n_jobs, int64_t n_in, const float* x, int64_t n_tok,
                  MatmulTiles tiles) {
  FASA_DISPATCH(matmul_multi(jobs, n_jobs, n_in, x, n_tok, tiles))
}

bool has_q8_path(DType type) {
  FASA_DISPATCH(has_q8_path(type))
}

void quantize_acts_q8(const float* x, int64_t n_tok, int64_t n_in, Q8Acts& out) {
  FASA_DISPATCH(quantize_acts_q8(x, n_tok, n_in, out))
}

void matmul_q8(DType type, const void* w, int64_t n_out, int64_t n_in, const Q8Acts& a, float* y) {
  FASA_DISPATCH(matmul_q8(type, w, n_out, n_in, a, y))
}

void matmul_q8_rows(DType type, const void* w, int64_t n_out, int64_t n_in, const Q8Acts& a,
                    int64_t o0, int64_t o1, float* y) {
  FASA_DISPATCH(matmul_q8_rows(type, w, n_out, n_in, a, o0, o1, y))
}

bool has_q8k_path(DType type) {
  FASA_DISPATCH(has_q8k_path(type))
}

void quantize_acts_q8k(const float* x, int64_t n_tok, int64_t n_in, Q8KActs& out) {
  FASA_DISPATCH(quantize_acts_q8k(x, n_tok, n_in, out))
}

void matmul_q8k(DType type, const void* w, int64_t n_out, int64_t n_in, const Q8KActs& a, float* y) {
  FASA_DISPATCH(matmul_q8k(type, w, n_out, n_in, a, y))
}

bool has_amx_path(DType type) {
  FASA_DISPATCH(has_amx_path(type))
}

bool matmul_q8k_amx(DType type, const void* w, int64_t n_out, int64_t n_in, const Q8KActs& a, float* y) {
  FASA_DISPATCH(matmul_q8k_amx(type, w, n_out, n_in, a, y))
}

bool matmul_q8_amx(DType type, const void* w, int64_t n_out, int64_t n_in, const Q8Acts& a, float* y) {
  FASA_DISPATCH(matmul_q8_amx(type, w, n_out, n_in, a, y))
}

const char* rope_layout_name(RopeLayout layout) {
  FASA_DISPATCH(rope_layout_name(layout))
}

void rmsnorm(const float* x, const float* w, float eps, int64_t n, float* y) {
  FASA_DISPATCH(rmsnorm(x, w, eps, n, y))
}

void rope_apply(float* v, int64_t head_dim, int64_t rope_dim, RopeLayout layout, int64_t pos, const float* freqs) {
  FASA_DISPATCH(rope_apply(v, head_dim, rope_dim, layout, pos, freqs))
}

void rope_freqs(float base, int64_t rope_dim, float* freqs) {
  FASA_DISPATCH(rope_freqs(base, rope_dim, freqs))
}

void silu_mul(const float* g, const float* u, int64_t n, float* h) {
  FASA_DISPATCH(silu_mul(g, u, n, h))
}

void gelu_tanh_mul(const float* g, const float* u, int64_t n, float* h) {
  FASA_DISPATCH(gelu_tanh_mul(g, u, n, h))
}

void add_inplace(float* y, const float* x, int64_t n) {
  FASA_DISPATCH(add_inplace(y, x, n))
}

void softmax_inplace(float* x, int64_t n) {
  FASA_DISPATCH(softmax_inplace(x, n))
}

float softmax_exp(float x) {
  FASA_DISPATCH(softmax_exp(x))
}

void softmax_exp_shifted(const float* x, float m, int64_t n, float* e) {
  FASA_DISPATCH(softmax_exp_shifted(x, m, n, e))
}

void tip_scores(const void* packed, bool f16, size_t stride, const TipTerm* terms, int n_terms, int n, float* scores) {
  FASA_DISPATCH(tip_scores(packed, f16, stride, terms, n_terms, n, scores))
}

void tip_scores_q8(const int8_t* packed, const uint16_t* scale, size_t stride,
                   const TipTerm* terms, int n_terms, int n, float* scores) {
  FASA_DISPATCH(tip_scores_q8(packed, scale, stride, terms, n_terms, n, scores))
}

void attn_state_clear(float* state, int head_dim) {
  FASA_DISPATCH(attn_state_clear(state, head_dim))
}

void attend_partial(const float* const* qs, int n_q, const int* n_keys, const KvRows& rows, const int32_t* slots, int begin, int end, float scale, float* states) {
  FASA_DISPATCH(attend_partial(qs, n_q, n_keys, rows, slots, begin, end, scale, states))
}

void attn_state_merge(float* into, const float* from, int head_dim) {
  FASA_DISPATCH(attn_state_merge(into, from, head_dim))
}

void attn_state_finish(const float* state, int head_dim, float* out) {
  FASA_DISPATCH(attn_state_finish(state, head_dim, out))
}

void attend_one(const float* q, const KvRows& rows, const int32_t* slots, int n, float scale, float* out) {
  FASA_DISPATCH(attend_one(q, rows, slots, n, scale, out))
}

void attend_probs(const float* q, const KvRows& rows, const int32_t* slots, int n, float scale, float* probs) {
  FASA_DISPATCH(attend_probs(q, rows, slots, n, scale, probs))
}

void qk_scores(const float* q, const KvRows& rows, const int32_t* slots, int n, float* scores) {
  FASA_DISPATCH(qk_scores(q, rows, slots, n, scores))
}

BandwidthResult measure_read_bandwidth(uint64_t bytes, int reps) {
  FASA_DISPATCH(measure_read_bandwidth(bytes, reps))
}

namespace detail {

void dequantize_row_portable(DType type, const void* src, float* dst, int64_t n) {
  FASA_DISPATCH(detail::dequantize_row_portable(type, src, dst, n))
}

void matmul_portable(DType type, const void* w, int64_t n_out, int64_t n_in, const float* x, int64_t n_tok, float* y) {
  FASA_DISPATCH(detail::matmul_portable(type, w, n_out, n_in, x, n_tok, y))
}

void matmul_q8_portable(DType type, const void* w, int64_t n_out, int64_t n_in, const Q8Acts& a, float* y) {
  FASA_DISPATCH(detail::matmul_q8_portable(type, w, n_out, n_in, a, y))
}

void matmul_q8k_portable(DType type, const void* w, int64_t n_out, int64_t n_in, const Q8KActs& a, float* y) {
  FASA_DISPATCH(detail::matmul_q8k_portable(type, w, n_out, n_in, a, y))
}

void softmax_portable(float* x, int64_t n) {
  FASA_DISPATCH(detail::softmax_portable(x, n))
}

}  // namespace detail


}  // namespace fasa
