#include "fasa/kernels/repack.h"

#include <cstring>
#include <type_traits>

#include "fasa/core/dtype.h"
#include "fasa/core/error.h"
#include "fasa/core/parallel.h"
#include "fasa/kernels/dequant.h"

namespace fasa {

namespace {

constexpr int64_t kQ4KBytes = 144, kQ6KBytes = 210;  // GGUF blocks
constexpr int64_t kQ4KR16Bytes = 148;                // per row of a Q4_K_R16 group block
constexpr int kR = kRepackRows;
// Byte offsets of the parts of a group block (repack.h).
constexpr int kQ4Sc = 2048, kQ4Mn = kQ4Sc + 8 * kR, kQ4D = kQ4Mn + 8 * kR, kQ4Dmin = kQ4D + 2 * kR;
constexpr int kQ6Qh = 2048, kQ6Sc = kQ6Qh + 1024, kQ6D = kQ6Sc + 16 * kR;
static_assert(kQ4Dmin + 2 * kR == kR * kQ4KR16Bytes && kQ6D + 2 * kR == kR * kQ6KBytes);

// Q4_K's 12 scale bytes <-> 8 scales and 8 mins of 6 bits (sub-block j < 4: low 6 bits of
// p[j] and p[j + 4]; j >= 4: low nibble from p[j + 4], top 2 bits from p[j - 4] and p[j]).
void decode_q4k_scales(const uint8_t* p, uint8_t* sc, uint8_t* mn) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = p[j] & 63;
    mn[j] = p[j + 4] & 63;
    sc[j + 4] = static_cast<uint8_t>((p[j + 8] & 15) | ((p[j] >> 6) << 4));
    mn[j + 4] = static_cast<uint8_t>((p[j + 8] >> 4) | ((p[j + 4] >> 6) << 4));
  }
}
void encode_q4k_scales(const uint8_t* sc, const uint8_t* mn, uint8_t* p) {
  for (int j = 0; j < 4; ++j) {
    p[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    p[j + 4] = static_cast<uint8_t>((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
    p[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
  }
}

// Row r's GGUF block `blk` into group block `g` (kIn), or back out of it.
template <bool kIn>
using GroupPtr = std::conditional_t<kIn, uint8_t*, const uint8_t*>;
template <bool kIn>
using BlockPtr = std::conditional_t<kIn, const uint8_t*, uint8_t*>;

// n bytes between the group block and the GGUF block, in the direction of kIn.
template <bool kIn>
void move_piece(GroupPtr<kIn> in_g, BlockPtr<kIn> in_blk, int n) {
  if constexpr (kIn) {
    std::memcpy(in_g, in_blk, n);
  } else {
    std::memcpy(in_blk, in_g, n);
  }
}

template <bool kIn>
void move_q4k(GroupPtr<kIn> g, int r, BlockPtr<kIn> blk) {
  constexpr auto mv = move_piece<kIn>;
  for (int lp = 0; lp < 8; ++lp) {
    for (int c = 0; c < 4; ++c) mv(g + ((lp * 4 + c) * kR + r) * 4, blk + 16 + 32 * c + 4 * lp, 4);
  }
  uint8_t sc[8], mn[8];
  if constexpr (kIn) decode_q4k_scales(blk + 4, sc, mn);
  for (int j = 0; j < 8; ++j) {
    mv(g + kQ4Sc + j * kR + r, sc + j, 1);
    mv(g + kQ4Mn + j * kR + r, mn + j, 1);
  }
  if constexpr (!kIn) encode_q4k_scales(sc, mn, blk + 4);
  mv(g + kQ4D + 2 * r, blk, 2);
  mv(g + kQ4Dmin + 2 * r, blk + 2, 2);
}

template <bool kIn>
void move_q6k(GroupPtr<kIn> g, int r, BlockPtr<kIn> blk) {
  constexpr auto mv = move_piece<kIn>;
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 16; ++l) mv(g + ((h * 16 + l) * kR + r) * 4, blk + 64 * h + 4 * l, 4);
    for (int l8 = 0; l8 < 8; ++l8) {
      mv(g + kQ6Qh + ((h * 8 + l8) * kR + r) * 4, blk + 128 + 32 * h + 4 * l8, 4);
    }
  }
  for (int s = 0; s < 16; ++s) mv(g + kQ6Sc + s * kR + r, blk + 192 + s, 1);
  mv(g + kQ6D + 2 * r, blk + 208, 2);
}

// Q4_0 / Q4_1 (qs at byte 2 or 4 after d [m]): the codes in lane order, then d [and m].
template <bool kIn>
void move_q4x(GroupPtr<kIn> g, int r, BlockPtr<kIn> blk, bool with_min) {
  constexpr auto mv = move_piece<kIn>;
  const int qs = with_min ? 4 : 2;
  for (int kk = 0; kk < 4; ++kk) mv(g + (kk * kR + r) * 4, blk + qs + 4 * kk, 4);
  mv(g + 4 * 4 * kR + 2 * r, blk, 2);
  if (with_min) mv(g + 4 * 4 * kR + 2 * kR + 2 * r, blk + 2, 2);
}

template <bool kIn>
void move_q8_0(GroupPtr<kIn> g, int r, BlockPtr<kIn> blk) {
  constexpr auto mv = move_piece<kIn>;
  for (int k = 0; k < 8; ++k) mv(g + (k * kR + r) * 4, blk + 2 + 4 * k, 4);
  mv(g + 8 * 4 * kR + 2 * r, blk, 2);
}

// Row r's GGUF block blk (of the GGUF type gt) into or out of group block g.
template <bool kIn>
void move_block(DType gt, GroupPtr<kIn> g, int r, BlockPtr<kIn> blk) {
  switch (gt) {
    case DType::Q4_K: move_q4k<kIn>(g, r, blk); return;
    case DType::Q6_K: move_q6k<kIn>(g, r, blk); return;
    case DType::Q4_0: move_q4x<kIn>(g, r, blk, false); return;
    case DType::Q4_1: move_q4x<kIn>(g, r, blk, true); return;
    case DType::Q8_0: move_q8_0<kIn>(g, r, blk); return;
    default: FASA_CHECK(false && "not a repackable type");
  }
}

}  // namespace

bool is_repacked(DType t) {
  switch (t) {
    case DType::Q4_0_R16:
    case DType::Q4_1_R16:
    case DType::Q8_0_R16:
    case DType::Q4_K_R16:
    case DType::Q6_K_R16: return true;
    default: return false;
  }
}

bool repackable(DType t, int64_t n_out, int64_t n_in) {
  const bool type_ok = t == DType::Q4_K || t == DType::Q6_K || t == DType::Q4_0 ||
                       t == DType::Q4_1 || t == DType::Q8_0;
  return type_ok && n_out > 0 && n_out % kR == 0 && n_in > 0 &&
         n_in % dtype_info(t).block_elems == 0;
}

DType repacked_type(DType t) {
  switch (t) {
    case DType::Q4_0: return DType::Q4_0_R16;
    case DType::Q4_1: return DType::Q4_1_R16;
    case DType::Q8_0: return DType::Q8_0_R16;
    case DType::Q4_K: return DType::Q4_K_R16;
    case DType::Q6_K: return DType::Q6_K_R16;
    default: FASA_CHECK(false && "not a repackable type"); return t;
  }
}

DType gguf_type(DType t) {
  switch (t) {
    case DType::Q4_0_R16: return DType::Q4_0;
    case DType::Q4_1_R16: return DType::Q4_1;
    case DType::Q8_0_R16: return DType::Q8_0;
    case DType::Q4_K_R16: return DType::Q4_K;
    case DType::Q6_K_R16: return DType::Q6_K;
    default: return t;
  }
}

int64_t group_block_bytes(DType repacked) {
  FASA_CHECK(is_repacked(repacked));
  return kR * dtype_info(repacked).block_bytes;
}

void repack_rows16(DType t, const void* src, int64_t n_out, int64_t n_in, void* dst) {
  FASA_CHECK(repackable(t, n_out, n_in));
  const int64_t nb = n_in / dtype_info(t).block_elems;
  const int64_t bb = dtype_info(t).block_bytes;
  const int64_t gb = group_block_bytes(repacked_type(t));
  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  parallel_for(n_out / kR, [&](int64_t grp) {
    uint8_t blk[kQ6KBytes];
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* g = d + (grp * nb + b) * gb;
      for (int r = 0; r < kR; ++r) {
        std::memcpy(blk, s + ((grp * kR + r) * nb + b) * bb, bb);
        move_block<true>(t, g, r, blk);
      }
    }
  });
}

void gguf_block_of(DType t, const void* w, int64_t nb, int64_t row, int64_t b, uint8_t* blk) {
  FASA_DCHECK(is_repacked(t));
  const uint8_t* g = static_cast<const uint8_t*>(w) + ((row / kR) * nb + b) * group_block_bytes(t);
  move_block<false>(gguf_type(t), g, static_cast<int>(row % kR), blk);
}

void dequantize_row_r16(DType t, const void* w, int64_t n_in, int64_t row, float* dst) {
  const int64_t be = dtype_info(t).block_elems, nb = n_in / be;
  uint8_t blk[256];
  for (int64_t b = 0; b < nb; ++b) {
    gguf_block_of(t, w, nb, row, b, blk);
    dequantize_row(gguf_type(t), blk, dst + be * b, be);
  }
}

}  // namespace fasa
