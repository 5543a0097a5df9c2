// Weight repacking at load: K-quant matrices with rows interleaved 16 at a time, so that one
// instruction computes the same step for 16 output rows (matmul_q8k.isa.cpp). The numerics of
// matmul_q8k.h do not change: every row gets the same integers and the same float sequence as
// from its GGUF rows, so a repacked matrix gives bit-identical results on every path.
//
// Both layouts hold a matrix as groups of 16 rows, group G's 256-block b at byte
// (G * nb + b) * group_block_bytes (nb = n_in / 256), row r of the group in each part below:
//
// Q4_K_R16 (16 x 148 = 2368 bytes per group block; GGUF Q4_K: d dmin sc[12] qs[128]):
//   qs   [8 lp][4 c][16 r][4 bytes]  bytes 32 c + 4 lp .. + 3 of row r's qs. Their low nibbles are
//                                    elements 64 c + 4 lp + i (lane lp of chunk c in
//                                    matmul_q8k.h), their high nibbles lane lp + 8
//   sc   [8 j][16 r] u8              the 6-bit scale of sub-block j (32 elements), decoded
//   mn   [8 j][16 r] u8              the 6-bit min of sub-block j, decoded
//   d    [16 r] fp16, dmin [16 r] fp16
// Q6_K_R16 (16 x 210 = 3360 bytes per group block; GGUF Q6_K: ql[128] qh[64] sc[16] d):
//   ql   [2 h][16 l][16 r][4 bytes]  bytes 64 h + 4 l .. + 3 of row r's ql: low nibbles are lane l
//                                    of chunk 2 h, high nibbles lane l of chunk 2 h + 1
//   qh   [2 h][8 l8][16 r][4 bytes]  bytes 32 h + 4 l8 .. + 3 of row r's qh (bits 2 k, 2 k + 1
//                                    with k = 2 e + l / 8 complete lane l of chunk 2 h + e)
//   sc   [16 g][16 r] i8             group scales
//   d    [16 r] fp16
// The 32-element block quants (matmul_q8.h: lane k of a block = elements 4 k .. 4 k + 3):
// Q4_0_R16 (16 x 18 = 288 bytes) and Q4_1_R16 (16 x 20 = 320; GGUF: d [m] qs[16]):
//   qs   [4 kk][16 r][4 bytes]       bytes 4 kk .. + 3 of row r's qs: low nibbles are lane kk,
//                                    high nibbles lane kk + 4
//   d    [16 r] fp16, (Q4_1) m [16 r] fp16
// Q8_0_R16 (16 x 34 = 544 bytes; GGUF: d qs[32] int8):
//   qs   [8 k][16 r][4 bytes]        bytes 4 k .. + 3 of row r's qs (lane k)
//   d    [16 r] fp16
#pragma once

#include <cstdint>

#include "fasa/core/dtype.h"

namespace fasa {

constexpr int kRepackRows = 16;

// Whether a matrix of this type and shape has a repacked layout (Q4_0, Q4_1, Q8_0, Q4_K, Q6_K;
// n_out a multiple of 16, n_in of the type's block).
bool repackable(DType t, int64_t n_out, int64_t n_in);
DType repacked_type(DType t);  // Q4_K -> Q4_K_R16, Q6_K -> Q6_K_R16, Q4_0 -> Q4_0_R16, ...
DType gguf_type(DType t);      // the inverse; other types map to themselves
bool is_repacked(DType t);
int64_t group_block_bytes(DType repacked);  // 16 x the GGUF block (Q4_K_R16: 16 x 148)

// src: [n_out, n_in] GGUF rows of t; dst: n_out * n_in / block_elems * dtype_info(repacked_type(t))
// .block_bytes bytes (148 per Q4_K block: the scales decoded; the others as in GGUF).
// Parallel over groups.
void repack_rows16(DType t, const void* src, int64_t n_out, int64_t n_in, void* dst);

// Row `row`'s block b of a repacked matrix rebuilt as the GGUF block (byte-exact), into blk:
// [block_bytes of gguf_type(t)]. w: the matrix, nb: blocks per row.
void gguf_block_of(DType t, const void* w, int64_t nb, int64_t row, int64_t b, uint8_t* blk);

// Row `row` of a repacked [n_out, n_in] matrix dequantized (the GGUF row's values exactly):
// dst: [n_in]. For a tied embedding table that was repacked as the output matrix.
void dequantize_row_r16(DType t, const void* w, int64_t n_in, int64_t row, float* dst);

}  // namespace fasa
