// The AMX int8 tile matmuls (kernels/matmul_amx.h) against the portable integer paths (the
// K-quants bit for bit, the 32-block quants within the tolerance matmul_amx.h derives) and the
// exact product of the dequantized weights with the quantized activations; AMX detection, the
// Linux permission, and FASA_NO_AMX. Skipped (with the reason) where the CPU or kernel lacks AMX.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fasa/core/amx.h"
#include "fasa/core/dtype.h"
#include "fasa/core/f16.h"
#include "fasa/core/isa.h"
#include "fasa/kernels/dequant.h"
#include "fasa/kernels/matmul.h"
#include "fasa/kernels/matmul_amx.h"
#include "fasa/kernels/matmul_q8.h"
#include "fasa/kernels/matmul_q8k.h"
#include "support/amx_env.h"
#include "support/isa_guard.h"
#include "support/ref/kernels_ref.h"

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace fasa {
namespace {

using test::AmxEnv;

#define SKIP_WITHOUT_AMX()                                                   \
  if (!amx_supported()) GTEST_SKIP() << "no AMX here: AMX " << amx_status(); \
  IsaGuard isa_guard_;                                                       \
  set_active_isa(Isa::Avx512)

const DType kKTypes[] = {DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K};
const DType kBlockTypes[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0};

bool is_k(DType t) { return dtype_info(t).block_elems == 256; }

// Byte offsets of a block's fp16 scale d and of its min field (dmin, or m; -1: none).
void f16_fields(DType type, int* d_off, int* min_off) {
  *d_off = 0;
  *min_off = -1;
  switch (type) {
    case DType::Q2_K:
      *d_off = 80;
      *min_off = 82;
      return;
    case DType::Q3_K: *d_off = 108; return;
    case DType::Q6_K: *d_off = 208; return;
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q4_1:
    case DType::Q5_1: *min_off = 2; return;
    default: return;
  }
}

std::vector<uint8_t> make_weights(DType type, int64_t n_out, int64_t n_in, std::mt19937& rng) {
  const DTypeInfo& info = dtype_info(type);
  const int64_t n_blocks = n_out * n_in / info.block_elems;
  std::vector<uint8_t> w(static_cast<size_t>(n_blocks * info.block_bytes));
  for (auto& b : w) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f), min(-0.5f, 0.5f);
  int d_off = 0, min_off = -1;
  f16_fields(type, &d_off, &min_off);
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t* blk = w.data() + b * info.block_bytes;
    const uint16_t d = fp32_to_fp16(scale(rng)), m = fp32_to_fp16(min(rng));
    std::memcpy(blk + d_off, &d, 2);
    if (min_off >= 0) std::memcpy(blk + min_off, &m, 2);
  }
  return w;
}

// Rows dequantized by the reference, optionally with the d or the min field zeroed first.
std::vector<double> dequant(DType type, std::vector<uint8_t> w, int64_t n_out, int64_t n_in,
                            int zero_off) {
  const DTypeInfo& info = dtype_info(type);
  if (zero_off >= 0) {
    for (size_t b = 0; b < w.size(); b += info.block_bytes)
      std::memset(w.data() + b + zero_off, 0, 2);
  }
  const int64_t row_bytes = n_in / info.block_elems * info.block_bytes;
  std::vector<float> row(static_cast<size_t>(n_in));
  std::vector<double> out(static_cast<size_t>(n_out * n_in));
  for (int64_t o = 0; o < n_out; ++o) {
    ref::dequantize_row(type, w.data() + o * row_bytes, row.data(), n_in);
    for (int64_t i = 0; i < n_in; ++i) out[o * n_in + i] = row[i];
  }
  return out;
}

// The quantized activations both paths see: x_i = dq * q_i, and the 32-blocks' min terms.
struct Quantized {
  Q8KActs k;
  Q8Acts b;
  double x(DType t, int64_t tok, int64_t i) const {
    if (is_k(t))
      return static_cast<double>(k.d[tok * (k.n_in / 256) + i / 256]) * k.q[tok * k.n_in + i];
    return static_cast<double>(b.d[tok * (b.n_in / 32) + i / 32]) * b.q[tok * b.n_in + i];
  }
};

// AMX vs portable vs exact: the K-quants give the portable path's bits (matmul_q8k.h); both
// within |y_amx - y| <= (nb + 5) 2^-23 S (matmul_amx.h) of the exact product, S bounding the
// block terms' magnitudes: sum_i |x_i| (|w_i without its min| + |its min|) (+ |m sx| per block
// for the 32-block min types, whose min is added apart from the products).
void check_type(DType type, int64_t n_out, int64_t n_in, int64_t n_tok, std::mt19937& rng) {
  const std::string what = std::string(dtype_name(type)) + " n_out=" + std::to_string(n_out) +
                           " n_in=" + std::to_string(n_in) + " n_tok=" + std::to_string(n_tok);
  const std::vector<uint8_t> w = make_weights(type, n_out, n_in, rng);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> xf(static_cast<size_t>(n_tok * n_in));
  for (auto& v : xf) v = nd(rng);
  Quantized a;
  std::vector<float> y_amx(static_cast<size_t>(n_tok * n_out), NAN), y_port(y_amx.size(), NAN);
  const bool k = is_k(type);
  if (k) {
    quantize_acts_q8k(xf.data(), n_tok, n_in, a.k);
    ASSERT_TRUE(matmul_q8k_amx(type, w.data(), n_out, n_in, a.k, y_amx.data())) << what;
    detail::matmul_q8k_portable(type, w.data(), n_out, n_in, a.k, y_port.data());
  } else {
    quantize_acts_q8(xf.data(), n_tok, n_in, a.b);
    ASSERT_TRUE(matmul_q8_amx(type, w.data(), n_out, n_in, a.b, y_amx.data())) << what;
    detail::matmul_q8_portable(type, w.data(), n_out, n_in, a.b, y_port.data());
  }
  int d_off, min_off;
  f16_fields(type, &d_off, &min_off);
  const std::vector<double> wd = dequant(type, w, n_out, n_in, -1);
  // Without the min (d s u, or (u - off) d), and the min alone (-dmin m, or m).
  const std::vector<double> w_nomin = min_off >= 0 ? dequant(type, w, n_out, n_in, min_off) : wd;
  const std::vector<double> w_min =
      min_off >= 0 ? dequant(type, w, n_out, n_in, d_off) : std::vector<double>(wd.size(), 0.0);
  const int64_t be = dtype_info(type).block_elems, nb = n_in / be;
  const double rel = static_cast<double>(nb + 5) * std::ldexp(1.0, -23);
  int bad = 0;
  double worst = 0.0;  // largest |y_amx - y_port| / tolerance
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t o = 0; o < n_out; ++o) {
      double exact = 0.0, s = 0.0;
      for (int64_t i = 0; i < n_in; ++i) {
        const double xi = a.x(type, t, i);
        // 32-block min types: (u - off) d times x here, m sx per block below (matmul_q8.h).
        exact += (k || min_off < 0 ? wd[o * n_in + i] : w_nomin[o * n_in + i]) * xi;
        if (k) {
          s += std::fabs(xi) * (std::fabs(w_nomin[o * n_in + i]) + std::fabs(w_min[o * n_in + i]));
        } else {
          s += std::fabs(xi) * std::fabs(w_nomin[o * n_in + i]);
          if (i % 32 == 0) s += std::fabs(w_min[o * n_in + i] * a.b.s[t * nb + i / 32]);
        }
      }
      if (!k && min_off >= 0) {  // the 32-block min term: sum_b m_b sx_b
        for (int64_t b = 0; b < nb; ++b) exact += w_min[o * n_in + b * 32] * a.b.s[t * nb + b];
      }
      const double tol = rel * s, ya = y_amx[t * n_out + o], yp = y_port[t * n_out + o];
      worst = std::max(worst, std::fabs(ya - yp) / tol);
      const bool same = std::memcmp(&y_amx[t * n_out + o], &y_port[t * n_out + o], 4) == 0;
      if (!((k ? same : std::fabs(ya - yp) <= tol) && std::fabs(ya - exact) <= tol) && bad++ == 0) {
        ADD_FAILURE() << what << " t=" << t << " o=" << o << ": amx " << ya << " portable " << yp
                      << " exact " << exact << " tolerance " << tol;
      }
    }
  }
  EXPECT_EQ(bad, 0) << what << " (worst |amx - portable| / tolerance " << worst << ")";
}

struct Shape {
  int64_t n_out, n_in, n_tok;
};

TEST(MatmulAmx, KQuantsSameBitsAsPortableAndNearExact) {
  SKIP_WITHOUT_AMX();
  std::mt19937 rng(2121);
  // n_out and n_tok multiples of 16 and not; odd and even token-tile counts; up to 600 tokens.
  const Shape shapes[] = {{16, 256, 16},
                          {33, 512, 17},
                          {7, 768, 40},
                          {50, 1280, 100},
                          {5, 256, 600}};
  for (const DType type : kKTypes) {
    for (const Shape& s : shapes) check_type(type, s.n_out, s.n_in, s.n_tok, rng);
  }
}

TEST(MatmulAmx, BlockQuantsWithinToleranceOfPortableAndExact) {
  SKIP_WITHOUT_AMX();
  std::mt19937 rng(3131);
  const Shape shapes[] = {{512, 256, 40}, {320, 256, 40},  {16, 32, 16}, {33, 96, 17},
                          {7, 768, 40},   {50, 1280, 100}, {5, 64, 600}};
  for (const DType type : kBlockTypes) {
    for (const Shape& s : shapes) check_type(type, s.n_out, s.n_in, s.n_tok, rng);
  }
}

// Every code, scale and activation at an extreme: the hi/lo split and the int32 tiles hold.
TEST(MatmulAmx, ExtremeBlocks) {
  SKIP_WITHOUT_AMX();
  for (const DType type : kKTypes) {
    const DTypeInfo& info = dtype_info(type);
    int d_off, min_off;
    f16_fields(type, &d_off, &min_off);
    for (const uint8_t fill : {0x00, 0xff, 0x80, 0x7f}) {
      std::vector<uint8_t> w(static_cast<size_t>(2 * info.block_bytes), fill);  // [1, 512]
      const uint16_t d = fp32_to_fp16(0.01f), m = fp32_to_fp16(0.03f);
      for (int b = 0; b < 2; ++b) {
        std::memcpy(w.data() + b * info.block_bytes + d_off, &d, 2);
        if (min_off >= 0) std::memcpy(w.data() + b * info.block_bytes + min_off, &m, 2);
      }
      for (const float xv : {-1.0f, 1.0f}) {
        const std::vector<float> x(16 * 512, xv);  // every q = -128
        Q8KActs a;
        quantize_acts_q8k(x.data(), 16, 512, a);
        std::vector<float> y(16, NAN), yp(16, NAN);
        ASSERT_TRUE(matmul_q8k_amx(type, w.data(), 1, 512, a, y.data()));
        detail::matmul_q8k_portable(type, w.data(), 1, 512, a, yp.data());
        EXPECT_EQ(0, std::memcmp(y.data(), yp.data(), y.size() * 4))
            << dtype_name(type) << " fill=" << int{fill} << " x=" << xv;
      }
    }
  }
}

// A token's AMX result depends on its row and token only: the same bits in any batch.
TEST(MatmulAmx, SameBitsInAnyBatch) {
  SKIP_WITHOUT_AMX();
  std::mt19937 rng(77);
  const int64_t n_out = 40, n_in = 512;
  for (const DType type : {DType::Q4_K, DType::Q6_K, DType::Q8_0}) {
    const std::vector<uint8_t> w = make_weights(type, n_out, n_in, rng);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(50 * n_in));
    for (auto& v : x) v = nd(rng);
    std::vector<float> y50(50 * n_out), y16(16 * n_out);
    AmxEnv on(true);
    matmul(type, w.data(), n_out, n_in, x.data(), 50, y50.data());
    matmul(type, w.data(), n_out, n_in, x.data() + 30 * n_in, 16, y16.data());  // tokens 30..45
    EXPECT_EQ(0, std::memcmp(y16.data(), y50.data() + 30 * n_out, y16.size() * 4))
        << dtype_name(type);
  }
}

// fasa::matmul takes AMX for n_tok >= kAmxMinTokens when active, the VNNI path otherwise
// (FASA_NO_AMX=1, set_amx_enabled(false), fewer tokens).
TEST(MatmulAmx, RoutingAndFallback) {
  SKIP_WITHOUT_AMX();
  std::mt19937 rng(5);
  const int64_t n_out = 24, n_in = 512, n_tok = kAmxMinTokens;
  // A 32-block type: its AMX bits differ from the VNNI path's (the K-quants' do not).
  const DType type = DType::Q8_0;
  const std::vector<uint8_t> w = make_weights(type, n_out, n_in, rng);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n_tok * n_in));
  for (auto& v : x) v = nd(rng);
  Q8Acts a;
  quantize_acts_q8(x.data(), n_tok, n_in, a);
  std::vector<float> y_amx(n_tok * n_out), y_vnni(n_tok * n_out), y(n_tok * n_out);
  ASSERT_TRUE(matmul_q8_amx(type, w.data(), n_out, n_in, a, y_amx.data()));
  matmul_q8(type, w.data(), n_out, n_in, a, y_vnni.data());
  ASSERT_NE(0, std::memcmp(y_amx.data(), y_vnni.data(), y.size() * 4)) << "paths indistinguishable";
  {
    AmxEnv on(true);
    EXPECT_TRUE(amx_active());
    EXPECT_EQ(amx_status(), "on");
    matmul(type, w.data(), n_out, n_in, x.data(), n_tok, y.data());
    EXPECT_EQ(0, std::memcmp(y.data(), y_amx.data(), y.size() * 4)) << "AMX expected";
    // One token fewer: VNNI (token 0's row equals the VNNI result).
    matmul(type, w.data(), n_out, n_in, x.data(), n_tok - 1, y.data());
    EXPECT_EQ(0, std::memcmp(y.data(), y_vnni.data(), (n_tok - 1) * n_out * 4)) << "VNNI expected";
    set_amx_enabled(false);
    EXPECT_FALSE(amx_active());
    EXPECT_EQ(amx_status(), "off (disabled)");
    matmul(type, w.data(), n_out, n_in, x.data(), n_tok, y.data());
    set_amx_enabled(true);
    EXPECT_EQ(0, std::memcmp(y.data(), y_vnni.data(), y.size() * 4)) << "disabled: VNNI expected";
    set_active_isa(Isa::Avx2);
    EXPECT_FALSE(amx_active());
    EXPECT_EQ(amx_status(), "off (instruction set is not avx512)");
    set_active_isa(Isa::Avx512);
  }
  AmxEnv off(false);
  EXPECT_FALSE(amx_active());
  EXPECT_EQ(amx_status(), "off (FASA_NO_AMX)");
  matmul(type, w.data(), n_out, n_in, x.data(), n_tok, y.data());
  EXPECT_EQ(0, std::memcmp(y.data(), y_vnni.data(), y.size() * 4)) << "FASA_NO_AMX: VNNI expected";
}

// The kernel granted this process the tile data state (the request amx_supported() makes).
TEST(AmxSupport, LinuxPermissionGranted) {
  SKIP_WITHOUT_AMX();
#if defined(__linux__) && defined(__x86_64__)
  unsigned long perm = 0;
  ASSERT_EQ(0, syscall(SYS_arch_prctl, 0x1022 /* ARCH_GET_XCOMP_PERM */, &perm));
  EXPECT_TRUE((perm >> 18) & 1) << "XTILEDATA not permitted: " << std::hex << perm;
#endif
}

// The scalar and avx2 sets have no AMX kernels: they decline (the caller falls back).
TEST(AmxSupport, OtherSetsDecline) {
  IsaGuard guard;
  for (const Isa isa : available_isas()) {
    if (isa == Isa::Avx512) continue;
    set_active_isa(isa);
    EXPECT_FALSE(has_amx_path(DType::Q4_K)) << isa_name(isa);
    Q8KActs a;
    float y = NAN;
    EXPECT_FALSE(matmul_q8k_amx(DType::Q4_K, nullptr, 0, 256, a, &y)) << isa_name(isa);
    EXPECT_TRUE(std::isnan(y));
  }
}

}  // namespace
}  // namespace fasa
